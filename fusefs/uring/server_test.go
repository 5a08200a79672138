package uring_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// roundTrip writes a file through the mount and reads it back through
// the mount and from the directory it mirrors.
func roundTrip(t *testing.T, m *mounted) {
	t.Helper()
	path := filepath.Join(m.mnt, "f")
	err := within(t, m, "write", func() error { return os.WriteFile(path, []byte("hello\n"), 0o644) })
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := within(t, m, "read", func() (err error) { got, err = os.ReadFile(path); return err }); err != nil || string(got) != "hello\n" {
		t.Fatalf("read through the mount: got %q, %v; want \"hello\\n\"", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(m.orig, "f")); err != nil || string(b) != "hello\n" {
		t.Fatalf("read of the mirrored file: got %q, %v", b, err)
	}
	waitReleased(t, m)
}

// waitReleased waits until the loopback file system has closed every
// file of m.orig, that is until the kernel's RELEASEs (sent in the
// background after a close) have reached the server: an unmount would
// drop those still queued, and the loopback would keep its files open.
func waitReleased(t *testing.T, m *mounted) {
	t.Helper()
	deadline := time.Now().Add(opWait)
	for strings.Contains(listFDs(), m.orig+"/") {
		if time.Now().After(deadline) {
			t.Fatalf("%v after the last close, files of %s are still open: a RELEASE did not reach the server (%s)", opWait, m.orig, listFDs())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServeAndUnmount mounts, serves a write and a read, and unmounts,
// on each transport, and over io_uring also with DeferTaskRun: the server
// says what it got, and once it has stopped every goroutine and
// descriptor it made is gone.
func TestServeAndUnmount(t *testing.T) {
	var cases []uring.Config
	for _, tp := range transports(t) {
		cases = append(cases, uring.Config{Only: tp})
		if tp == uring.URing {
			cases = append(cases, uring.Config{Only: tp, DeferTaskRun: true})
		}
	}
	for _, cfg := range cases {
		tp := cfg.Only
		t.Run(fmt.Sprintf("transport=%s/defer=%v", tp, cfg.DeferTaskRun), func(t *testing.T) {
			base := takeBaseline(t)
			m := mount(t, nil, fuse.MountOptions{}, cfg)
			roundTrip(t, m)
			checkShape(t, m, tp)
			if m.srv.DeferTaskRun() != cfg.DeferTaskRun {
				t.Errorf("DeferTaskRun: got %v, want %v", m.srv.DeferTaskRun(), cfg.DeferTaskRun)
			}
			if tp == uring.URing {
				// The kernel's view: only a ring with deferred task work
				// refuses a wait from another thread.
				var want error // nil: an immediate return
				if cfg.DeferTaskRun {
					want = syscall.EEXIST
				}
				if err := uring.EnterFromOutside(m.srv, 0); !errors.Is(err, want) {
					t.Errorf("a wait on queue 0's ring from another thread: got %v, want %v", err, want)
				}
			}
			m.unmount(t)
			if err := m.srv.Unmount(); err != nil {
				t.Errorf("a second Unmount: %v", err)
			}
			base.check(t)
		})
	}
}

// TestGOMAXPROCSWhileServing checks that with HoldP the queues' Ps are
// added to GOMAXPROCS while they live, and taken back once Serve has
// returned; by default, or where the runtime cannot preempt a queue
// (GODEBUG=asyncpreemptoff=1), nothing changes.
func TestGOMAXPROCSWhileServing(t *testing.T) {
	requireURing(t)
	for _, tc := range []struct {
		name    string
		holdP   bool
		godebug string
		adds    bool
	}{
		{name: "default"},
		{name: "holdP", holdP: true, adds: true},
		{name: "asyncpreemptoff", holdP: true, godebug: "asyncpreemptoff=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.godebug != "" {
				t.Setenv("GODEBUG", tc.godebug)
			}
			before := runtime.GOMAXPROCS(0)
			m := mount(t, nil, fuse.MountOptions{}, uring.Config{Only: uring.URing, HoldP: tc.holdP})
			roundTrip(t, m)
			want := before
			if tc.adds {
				want += m.srv.Rings()
			}
			if got := runtime.GOMAXPROCS(0); got != want {
				t.Errorf("GOMAXPROCS while serving %d queues: got %d, want %d", m.srv.Queues(), got, want)
			}
			m.unmount(t)
			if got := runtime.GOMAXPROCS(0); got != before {
				t.Errorf("GOMAXPROCS once Serve returned: got %d, want %d", got, before)
			}
		})
	}
}

// checkShape checks what a server over tp says of its queues.
func checkShape(t *testing.T, m *mounted, tp uring.Kind) {
	t.Helper()
	s := m.srv
	if s.Transport() != tp || s.FellBack() != nil {
		t.Fatalf("transport %s (fell back: %v), want %s", s.Transport(), s.FellBack(), tp)
	}
	if s.MaxWrite() != 128<<10 {
		t.Errorf("MaxWrite: got %d, want go-fuse's default of 128 KiB", s.MaxWrite())
	}
	if tp == uring.DevFuse {
		if s.Queues() != 0 || s.Depth() != 0 || s.Served() != nil || s.Polls() != 0 || s.PinnedBytes() != 0 {
			t.Errorf("over /dev/fuse: %d queues of depth %d, served %v, %d polls, %d bytes pinned; want none",
				s.Queues(), s.Depth(), s.Served(), s.Polls(), s.PinnedBytes())
		}
		return
	}
	cpus := testkit.Must(uring.PossibleCPUs())(t)
	if s.Queues() != cpus || s.Depth() != uring.DefaultDepth || len(s.Served()) != cpus {
		t.Errorf("over io_uring: %d queues of depth %d, %d counts; want %d of %d", s.Queues(), s.Depth(), len(s.Served()), cpus, uring.DefaultDepth)
	}
	if want := int64(cpus * uring.DefaultDepth * (4096 + 128<<10)); s.PinnedBytes() != want {
		t.Errorf("PinnedBytes: got %d, want %d", s.PinnedBytes(), want)
	}
	var served uint64
	for _, n := range s.Served() {
		served += n
	}
	if served == 0 || s.Polls() != 1 {
		t.Errorf("the queues served %d requests and %d POLLs; want some, and the prime's one POLL", served, s.Polls())
	}
	if _, st := s.InodeRetrieveCache(fuse.FUSE_ROOT_ID, 0, make([]byte, 8)); st != fuse.ENOSYS {
		t.Errorf("InodeRetrieveCache over io_uring: got %v, want ENOSYS", st)
	}
	var st unix.Stat_t
	if err := within(t, m, "stat", func() error { return unix.Stat(m.mnt, &st) }); err != nil || unix.Minor(st.Dev) != uring.Conn(s) {
		t.Errorf("connection: the server aborts %d, the mount is %d (%v)", uring.Conn(s), unix.Minor(st.Dev), err)
	}
}

// TestFallBack plays each way io_uring can be refused: the server serves
// over /dev/fuse and says why, or, with Only: URing, fails and leaves
// nothing mounted.
func TestFallBack(t *testing.T) {
	requireURing(t)
	refuseRegister := func(t *testing.T) {
		uring.SetRegisterShortfall(4096)
		t.Cleanup(func() { uring.SetRegisterShortfall(0) })
	}
	cases := []struct {
		name  string
		cfg   uring.Config
		opts  fuse.MountOptions
		setup func(t *testing.T)
		why   string
		is    error
	}{
		{name: "pinned-cap", cfg: uring.Config{MaxPinnedBytes: 1}, why: "MaxPinnedBytes", is: uring.ErrPinnedCap},
		{name: "disabled-capability", opts: fuse.MountOptions{DisabledCapabilities: fuse.CAP_OVER_IO_URING}, why: "DisabledCapabilities"},
		{name: "register-refused", why: "refused the queues", setup: refuseRegister},
		{name: "register-refused-defer", cfg: uring.Config{DeferTaskRun: true}, why: "refused the queues", setup: refuseRegister},
	}
	for _, c := range cases {
		t.Run("case="+c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(t)
			}
			base := takeBaseline(t)
			m := mount(t, nil, c.opts, c.cfg)
			if m.srv.Transport() != uring.DevFuse || !errors.Is(m.srv.FellBack(), uring.ErrUnavailable) ||
				!strings.Contains(m.srv.FellBack().Error(), c.why) || (c.is != nil && !errors.Is(m.srv.FellBack(), c.is)) {
				t.Fatalf("over %s, fell back because %v; want /dev/fuse, ErrUnavailable and %q", m.srv.Transport(), m.srv.FellBack(), c.why)
			}
			roundTrip(t, m)
			if s := m.srv; s.Queues() != 0 || s.Served() != nil || s.Polls() != 0 || s.PinnedBytes() != 0 {
				t.Errorf("fallen back: %d queues, served %v, %d polls, %d bytes pinned; want none", s.Queues(), s.Served(), s.Polls(), s.PinnedBytes())
			}
			m.unmount(t)
			base.check(t)

			strict := c.cfg
			strict.Only = uring.URing
			mnt := t.TempDir()
			srv, err := uring.NewServer(loopback(t, t.TempDir()), mnt, &c.opts, strict)
			if err == nil || !strings.Contains(err.Error(), c.why) {
				if srv != nil {
					go srv.Serve()
					srv.Unmount()
				}
				t.Fatalf("Only: URing: got %v, want an error saying %q", err, c.why)
			}
			if mounted, err := isMounted(mnt); err != nil || mounted {
				t.Errorf("Only: URing failed, but %s is mounted (%v)", mnt, err)
			}
			base.check(t)
		})
	}
}

// TestOnlyDevFuse serves over /dev/fuse without trying io_uring.
func TestOnlyDevFuse(t *testing.T) {
	m := mount(t, nil, fuse.MountOptions{}, uring.Config{Only: uring.DevFuse})
	if m.srv.FellBack() != nil {
		t.Errorf("Only: DevFuse fell back because %v; want no reason", m.srv.FellBack())
	}
	roundTrip(t, m)
}

// isMounted reports whether mnt is a mount point, from
// /proc/self/mountinfo.
func isMounted(mnt string) (bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == mnt {
			return true, nil
		}
	}
	return false, nil
}

// TestDeadQueueAborts breaks queue 0's ring under it: the next request
// from CPU 0 makes its io_uring_enter fail, and the server aborts the
// connection, so that the client and every later one get an error
// instead of waiting forever, and Serve returns. The queues enter their
// rings by fd here (a registered ring fd would not see the fd replaced).
func TestDeadQueueAborts(t *testing.T) {
	requireURing(t)
	for _, deferTW := range []bool{false, true} {
		t.Run(fmt.Sprintf("defer=%v", deferTW), func(t *testing.T) { checkDeadQueueAborts(t, deferTW) })
	}
}

// checkDeadQueueAborts is TestDeadQueueAborts with rings of deferTW.
func checkDeadQueueAborts(t *testing.T, deferTW bool) {
	base := takeBaseline(t)
	t.Cleanup(uring.SetRegisterRingFD(false))
	m := mount(t, nil, fuse.MountOptions{}, uring.Config{Only: uring.URing, DeferTaskRun: deferTW})
	roundTrip(t, m)
	null := testkit.Must(unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0))(t)
	if err := unix.Dup2(null, uring.RingFD(m.srv, 0)); err != nil {
		t.Fatal(err)
	}
	unix.Close(null)
	err := onCPU(t, m, 0, "stat from CPU 0", func() error {
		var st unix.Stat_t
		return unix.Stat(filepath.Join(m.mnt, "nonexistent"), &st)
	})
	if !errors.Is(err, syscall.ECONNABORTED) && !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("stat on a dead queue: got %v, want ECONNABORTED or ENOTCONN", err)
	}
	err = within(t, m, "read", func() error { _, err := os.ReadFile(filepath.Join(m.mnt, "f")); return err })
	if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		t.Errorf("read after the abort: got %v, want ENOTCONN", err)
	}
	select {
	case <-m.served:
	case <-time.After(opWait):
		t.Fatalf("Serve did not return within %v of the abort", opWait)
	}
	if !strings.Contains(m.log.String(), "a queue failed, aborting the FUSE connection") {
		t.Errorf("the log does not say why the connection was aborted:\n%s", m.log)
	}
	t.Logf("the server's log: %s", m.log)
	m.unmount(t)
	base.check(t)
}

// panicFS panics in Lookup of "panic".
type panicFS struct{ fuse.RawFileSystem }

func (p panicFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if name == "panic" {
		panic("broken lookup")
	}
	return p.RawFileSystem.Lookup(cancel, h, name, out)
}

// TestPanicInHandler looks up a name whose Lookup panics, more often
// than there are ring entries: go-fuse answers EIO and logs the panic
// (or answers what MountOptions.PanicHandler says), and so do the
// queues, which go on serving.
func TestPanicInHandler(t *testing.T) {
	for _, tp := range transports(t) {
		for _, handler := range []bool{false, true} {
			t.Run("transport="+string(tp)+"/handler="+map[bool]string{false: "default", true: "custom"}[handler], func(t *testing.T) {
				opts, want := fuse.MountOptions{}, syscall.EIO
				if handler {
					opts.PanicHandler, want = func(any) fuse.Status { return fuse.Status(syscall.ENOTRECOVERABLE) }, syscall.ENOTRECOVERABLE
				}
				orig := t.TempDir()
				m := mount(t, panicFS{loopback(t, orig)}, opts, uring.Config{Only: tp})
				cpus := testkit.Must(uring.PossibleCPUs())(t)
				for range 2 * cpus * uring.DefaultDepth {
					err := within(t, m, "stat", func() error { _, err := os.Stat(filepath.Join(m.mnt, "panic")); return err })
					if !errors.Is(err, want) {
						t.Fatalf("stat of a name whose Lookup panics: got %v, want %v", err, want)
					}
				}
				if !handler && !strings.Contains(m.log.String(), "panic in FS handler: broken lookup") {
					t.Errorf("the panic is not logged:\n%.500s", m.log)
				}
				if err := os.WriteFile(filepath.Join(orig, "f"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				err := within(t, m, "read", func() error { _, err := os.ReadFile(filepath.Join(m.mnt, "f")); return err })
				if err != nil {
					t.Fatalf("after the panics: %v", err)
				}
			})
		}
	}
}
