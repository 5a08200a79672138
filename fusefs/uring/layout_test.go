package uring

import (
	"reflect"
	"testing"
)

// TestGoFuseLayout holds the fields this package reaches inside go-fuse's
// Server (retrieve.go) to the go-fuse it is built with, and shows that a
// field of another name, type or offset is told apart: NewServer then
// refuses io_uring rather than reach for it.
func TestGoFuseLayout(t *testing.T) {
	if err := goFuseLayout(); err != nil {
		t.Fatalf("goFuseLayout: %v", err)
	}
	type renamed struct {
		nodeid, offset uint64
		data           []byte
		n              int
		st             int32
		ready          chan struct{}
	}
	type retyped struct {
		nodeid, offset uint64
		dest           []byte
		n              int64
		st             int32
		ready          chan struct{}
	}
	for _, bad := range []reflect.Type{reflect.TypeFor[renamed](), reflect.TypeFor[retyped](), reflect.TypeFor[int]()} {
		if err := sameFields(bad, reflect.TypeFor[retrieveRequest]()); err == nil {
			t.Errorf("sameFields(%s, retrieveRequest) = nil, want an error", bad)
		}
	}
	missing := goFuseField{path: []string{"protocolServer", "retrieveTable"}}
	if err := missing.verify(); err == nil {
		t.Errorf("verify of a missing field = nil, want an error")
	}
}

// TestRetrieveCap: a retrieve always leaves the kernel room for the
// 40-byte fuse_notify_retrieve_in in the payload, and never asks more
// than max_write.
func TestRetrieveCap(t *testing.T) {
	for _, c := range []struct{ maxWrite, want int }{
		{4096, 4096}, {8192, 4096}, {128 << 10, 124 << 10}, {1 << 20, 1<<20 - 4096}, {1000, 1000},
	} {
		p := payloadSize(c.maxWrite)
		got := retrieveCap(c.maxWrite, p)
		if got != c.want || got+retrieveIn > p {
			t.Errorf("retrieveCap(%d, payload %d) = %d, want %d (and at most %d)", c.maxWrite, p, got, c.want, p-retrieveIn)
		}
	}
}
