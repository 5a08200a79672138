package client

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestControlWritesParse(t *testing.T) {
	name, n, err := ParseNewDevice(NewDevice("dev7", 3), 64)
	if err != nil || name != "dev7" || n != 3 {
		t.Fatalf("ParseNewDevice(NewDevice(dev7, 3)): got %q, %d, %v", name, n, err)
	}
	names, err := ParseDeleteDevices(DeleteDevices("a", "b", "c"))
	if err != nil || !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("ParseDeleteDevices(DeleteDevices(a, b, c)): got %q, %v", names, err)
	}
	if name, n, err := ParseNewDevice([]byte("solo"), 64); err != nil || name != "solo" || n != 0 {
		t.Fatalf("ParseNewDevice(solo): got %q, %d, %v; want solo, 0", name, n, err)
	}
	for _, bad := range []string{"", "\n", "a 1 2", "a -1", "a 65", "a x", "a\x00b"} {
		if _, _, err := ParseNewDevice([]byte(bad), 64); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseNewDevice(%q): got %v, want ErrSyntax", bad, err)
		}
	}
	for _, bad := range []string{"", " \n", "a\x00"} {
		if _, err := ParseDeleteDevices([]byte(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseDeleteDevices(%q): got %v, want ErrSyntax", bad, err)
		}
	}
}

func TestParseStats(t *testing.T) {
	s, err := ParseStats([]byte("server.lock rcu\nserver.nodeids 5\nrequests.LOOKUP 9\ntree.nodes 40\nlock.read.wait_ns 1500\nnew.key x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock != "rcu" || !s.Served || s.Nodeids != 5 || s.Requests["LOOKUP"] != 9 || s.Nodes != 40 ||
		s.ReadWait != 1500*time.Nanosecond || s.Values["new.key"] != "x" || len(s.Keys) != 6 {
		t.Fatalf("got %+v", s)
	}
	s, err = ParseStats([]byte("server.lock rwsem\nlock.read.held_ns 2500\nlock.write.held_ns 7\nlock.hold_sample_every 64\nlock.read.counted 1\n"))
	if err != nil || s.ReadHeld != 2500*time.Nanosecond || s.WriteHeld != 7 || s.HoldSampleEvery != 64 || !s.ReadCounted {
		t.Fatalf("lock lines: got %+v, %v", s, err)
	}
	if s, err := ParseStats([]byte("server.lock none\nlock.read.counted 0\n")); err != nil || s.ReadCounted {
		t.Fatalf("lock.read.counted 0: got %v, %v; want false", s.ReadCounted, err)
	}
	if _, err := ParseStats([]byte("tree.nodes 1\n")); err == nil {
		t.Error("a file without server.lock parsed")
	}
	if _, err := ParseStats([]byte("server.lock rcu\ntree.nodes many\n")); err == nil {
		t.Error("a counter that is not a number parsed")
	}
}
