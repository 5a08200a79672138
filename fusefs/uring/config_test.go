package uring

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// TestPlan checks how MaxPinnedBytes sizes the queues: depth first, then
// the payload, and an error past the smallest queues.
func TestPlan(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("the table assumes 4 KiB pages")
	}
	const k, m = 1 << 10, 1 << 20
	tests := []struct {
		name         string
		cpus, depth  int
		maxWrite     int
		limit        int64
		wantDepth    int
		wantPayload  int
		wantMaxWrite int
		wantPinned   int64
		wantErr      error
	}{
		{"default", 2, 0, 128 * k, 0, 4, 128 * k, 128 * k, 2 * 4 * 132 * k, nil},
		{"448 CPUs uncapped", 448, 0, 128 * k, 0, 4, 128 * k, 128 * k, 448 * 4 * 132 * k, nil},
		{"448 CPUs in 128 MiB: depth 2", 448, 0, 128 * k, 128 * m, 2, 128 * k, 128 * k, 448 * 2 * 132 * k, nil},
		{"448 CPUs in 32 MiB: depth 1, 68 KiB", 448, 0, 128 * k, 32 * m, 1, 68 * k, 68 * k, 448 * 72 * k, nil},
		{"under the cap", 4, 8, 64 * k, 64 * m, 8, 64 * k, 64 * k, 4 * 8 * 68 * k, nil},
		{"small MaxWrite keeps the minimum payload", 1, 1, 100, 0, 1, 8 * k, 100, 12 * k, nil},
		{"below the smallest queues", 448, 0, 128 * k, 448*12*k - 1, 0, 0, 0, 0, ErrPinnedCap},
		{"exactly the smallest queues", 448, 0, 128 * k, 448 * 12 * k, 1, 8 * k, 8 * k, 448 * 12 * k, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, mw, err := plan(Config{Depth: tt.depth, MaxPinnedBytes: tt.limit}, tt.cpus, tt.maxWrite)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error: got %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if g.queues != tt.cpus || g.depth != tt.wantDepth || g.payload != tt.wantPayload || mw != tt.wantMaxWrite {
				t.Errorf("got %d queues of depth %d, payload %d, MaxWrite %d; want %d of %d, %d, %d",
					g.queues, g.depth, g.payload, mw, tt.cpus, tt.wantDepth, tt.wantPayload, tt.wantMaxWrite)
			}
			if g.pinned() != tt.wantPinned || (tt.limit > 0 && g.pinned() > tt.limit) {
				t.Errorf("pinned: got %d, want %d (cap %d)", g.pinned(), tt.wantPinned, tt.limit)
			}
		})
	}
	if _, _, err := plan(Config{Depth: maxDepth + 1}, 1, 4096); err == nil {
		t.Errorf("depth %d: got no error", maxDepth+1)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]int{"0\n": 1, "0-1\n": 2, "0-3,8-11": 12, "0,2": 3, "0-447": 448} {
		if got, err := parseCPUList(in); err != nil || got != want {
			t.Errorf("parseCPUList(%q): got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "3-1", "0-"} {
		if got, err := parseCPUList(in); err == nil {
			t.Errorf("parseCPUList(%q): got %d, want an error", in, got)
		}
	}
}

// TestMountArgs checks the mount(2) arguments against go-fuse's direct
// mount: flag options become flags, the rest data.
func TestMountArgs(t *testing.T) {
	o := &fuse.MountOptions{MaxWrite: 65536, AllowOther: true, IDMappedMount: true,
		Options: []string{"noexec", "dev", "ro", "fsname=x"}}
	flags, data := mountArgs(7, unix.S_IFDIR, o)
	if want := uintptr(unix.MS_NOSUID | unix.MS_NOEXEC); flags != want {
		t.Errorf("flags: got %#x, want %#x", flags, want)
	}
	want := "fd=7,rootmode=40000,user_id=" + strconv.Itoa(os.Geteuid()) + ",group_id=" + strconv.Itoa(os.Getegid()) +
		",max_read=65536,ro,fsname=x,allow_other,default_permissions"
	if data != want {
		t.Errorf("data:\ngot  %s\nwant %s", data, want)
	}
	o = &fuse.MountOptions{DirectMountFlags: unix.MS_MGC_VAL, Options: []string{"default_permissions"}, IDMappedMount: true}
	if flags, data := mountArgs(3, unix.S_IFREG, o); flags != unix.MS_MGC_VAL || data[len(data)-len(",default_permissions"):] != ",default_permissions" {
		t.Errorf("DirectMountFlags and default_permissions once: got %#x %s", flags, data)
	}
}

// TestParseKind: each Kind parses back from its String, "auto" is the
// zero Kind, and any other name is refused.
func TestParseKind(t *testing.T) {
	for _, k := range Kinds {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q): got %q, %v; want %q", k.String(), got, err, k)
		}
	}
	if Auto.String() != "auto" || Auto != Kind("") {
		t.Errorf("Auto is %q, named %q; want the zero Kind, named auto", string(Auto), Auto.String())
	}
	for _, s := range []string{"", "bogus", "AUTO", "io_uring"} {
		if k, err := ParseKind(s); err == nil {
			t.Errorf("ParseKind(%q): got %q, want an error", s, k)
		}
	}
}
