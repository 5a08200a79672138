package client

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestControlWritesParse(t *testing.T) {
	name, n, err := ParseNewDevice(NewDeviceLine("dev7", 3), 64)
	if err != nil || name != "dev7" || n != 3 {
		t.Fatalf("ParseNewDevice(NewDeviceLine(dev7, 3)): got %q, %d, %v", name, n, err)
	}
	names, err := ParseDeleteDevices(DeleteDevicesLine("a", "b", "c"))
	if err != nil || !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("ParseDeleteDevices(DeleteDevicesLine(a, b, c)): got %q, %v", names, err)
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
	require.NoError(t, err)
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

func TestCgroupControlWritesParse(t *testing.T) {
	for _, p := range []string{"kubepods.slice", "kubepods.slice/kubepods-podx.slice/cri-containerd-1.scope"} {
		for _, data := range [][]byte{NewCgroupLine(p), DeleteCgroupLine(p), NewCgroupLine("/" + p)} {
			if got, err := ParseCgroupPath(data); err != nil || got != p {
				t.Errorf("ParseCgroupPath(%q): got %q, %v; want %q", data, got, err, p)
			}
		}
	}
	for _, bad := range []string{"", "\n", "/", "a b", "a//b", "a/", "a/./b", "../a", "a\x00b"} {
		if _, err := ParseCgroupPath([]byte(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseCgroupPath(%q): got %v, want ErrSyntax", bad, err)
		}
	}
}

// The cgroup formats, on lines as Documentation/admin-guide/cgroup-v2.rst
// shows them.
func TestParseCgroupFiles(t *testing.T) {
	flat, err := ParseFlatKeyed([]byte("anon 1228800\nfile 0\n"))
	if v, ok := Get(flat, "anon"); err != nil || len(flat) != 2 || !ok || v != 1228800 {
		t.Errorf("flat keyed: got %v, %v", flat, err)
	}
	nested, err := ParseNestedKeyed([]byte("8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021\n"))
	if err != nil || len(nested) != 2 || nested[1].Key != "8:0" || len(nested[1].Values) != 6 || nested[1].Values[5] != (KeyValue{"dios", 3021}) {
		t.Errorf("nested keyed: got %+v, %v", nested, err)
	}
	if vals, err := ParseValues([]byte("1\n42\n")); err != nil || !slices.Equal(vals, []uint64{1, 42}) {
		t.Errorf("values: got %v, %v", vals, err)
	}
	if vals, err := ParseValues(nil); err != nil || len(vals) != 0 {
		t.Errorf("an empty cgroup.procs: got %v, %v", vals, err)
	}
	for _, bad := range []string{"anon", "anon x\n", "anon 1", " 1\n", "anon -1\n"} {
		if _, err := ParseFlatKeyed([]byte(bad)); !errors.Is(err, ErrCgroupFormat) {
			t.Errorf("ParseFlatKeyed(%q): got %v, want ErrCgroupFormat", bad, err)
		}
	}
	for _, bad := range []string{"8:0\n", "8:0 rbytes\n", "8:0 rbytes=x\n", "8:0  rbytes=1\n"} {
		if _, err := ParseNestedKeyed([]byte(bad)); !errors.Is(err, ErrCgroupFormat) {
			t.Errorf("ParseNestedKeyed(%q): got %v, want ErrCgroupFormat", bad, err)
		}
	}
}
