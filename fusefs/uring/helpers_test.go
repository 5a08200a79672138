package uring_test

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestMain skips the Example where FUSE cannot be mounted (it needs
// root and /dev/fuse); under CI it runs, and fails there without them.
func TestMain(m *testing.M) {
	flag.Parse()
	if _, err := os.Stat("/dev/fuse"); (err != nil || os.Geteuid() != 0) && os.Getenv("CI") == "" {
		flag.Set("test.skip", "^Example")
	}
	os.Exit(m.Run())
}

// opWait bounds every client operation a test makes on a mount.
const opWait = 30 * time.Second

// mounted is a loopback file system served by a uring.Server.
type mounted struct {
	srv    *uring.Server
	mnt    string // the mount point
	orig   string // the directory it mirrors
	served chan struct{}
	log    *testkit.SyncBuffer // the server's Logger
}

// transports are the Config.Only values a test runs with: /dev/fuse
// always, io_uring where fusetest.URing says so.
func transports(t *testing.T) []uring.Kind {
	t.Helper()
	testkit.RequireFUSE(t)
	if fusetest.URing(t) {
		return []uring.Kind{uring.DevFuse, uring.URing}
	}
	return []uring.Kind{uring.DevFuse}
}

// requireURing skips a test that needs io_uring where it is unavailable
// (and fails it under CI where the kernel has it switched off).
func requireURing(t *testing.T) {
	t.Helper()
	testkit.RequireFUSE(t)
	if !fusetest.URing(t) {
		t.Skip("io_uring unavailable")
	}
}

// loopback is go-fuse's loopback file system of a fresh directory, with
// go-fuse's test options (its TestPosix: 1 s caches).
func loopback(t *testing.T, orig string) fuse.RawFileSystem {
	t.Helper()
	root, err := gofs.NewLoopbackRoot(orig)
	if err != nil {
		t.Fatal(err)
	}
	sec := time.Second
	return gofs.NewNodeFS(root, &gofs.Options{EntryTimeout: &sec, AttrTimeout: &sec})
}

// mount serves fs (loopback of a fresh directory if nil) with opts and
// cfg, waits until it is mounted and primed, and unmounts it when the
// test ends, failing the test if the server does not stop.
func mount(t *testing.T, fs fuse.RawFileSystem, opts fuse.MountOptions, cfg uring.Config) *mounted {
	t.Helper()
	testkit.RequireFUSE(t)
	dir := t.TempDir()
	m := &mounted{mnt: filepath.Join(dir, "mnt"), orig: filepath.Join(dir, "orig"), served: make(chan struct{}), log: &testkit.SyncBuffer{}}
	for _, d := range []string{m.mnt, m.orig} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if fs == nil {
		fs = loopback(t, m.orig)
	}
	if opts.Logger == nil {
		opts.Logger = log.New(m.log, "", 0)
	}
	opts.DirectMount = true
	srv, err := uring.NewServer(fs, m.mnt, &opts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.srv = srv
	go func() { srv.Serve(); close(m.served) }()
	t.Cleanup(func() { m.unmount(t) })
	if err := within(t, m, "WaitMount", srv.WaitMount); err != nil {
		t.Fatal(err)
	}
	if cfg.Only != "" && srv.Transport() != cfg.Only {
		t.Fatalf("serving over %s, want %s (fell back: %v)", srv.Transport(), cfg.Only, srv.FellBack())
	}
	return m
}

// unmount unmounts m, idempotently, and fails the test if Serve does not
// return within opWait; a mount that stays busy is aborted. An Unmount
// refused because the kernel still counts the mount busy (the files a
// client just closed, on a loaded machine) is tried again until opWait:
// go-fuse's own retries give up after about 0.3 s.
func (m *mounted) unmount(t *testing.T) {
	t.Helper()
	unmounted := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(opWait - time.Second)
		for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
			err := m.srv.Unmount()
			if err == nil || time.Now().After(deadline) {
				unmounted <- err
				return
			}
			time.Sleep(delay)
		}
	}()
	var err error
	select {
	case err = <-unmounted:
	case <-time.After(opWait):
		err = fmt.Errorf("did not return within %v", opWait)
	}
	if err != nil {
		t.Errorf("Unmount: %v", err)
		uring.Abort(m.srv)
		unix.Unmount(m.mnt, unix.MNT_DETACH)
	}
	select {
	case <-m.served:
	case <-time.After(opWait):
		uring.StopQueues(m.srv)
		t.Errorf("Serve did not return within %v of Unmount", opWait)
	}
}

// within runs a client operation on m with a deadline: past opWait the
// connection is aborted, so that the operation returns, and the test
// fails.
func within(t *testing.T, m *mounted, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(opWait):
	}
	uring.Abort(m.srv)
	t.Fatalf("%s on %s did not return within %v: aborted the connection (%v)", what, m.mnt, opWait, <-done)
	return nil
}

// onCPU runs f on a thread pinned to cpu, within the deadline.
func onCPU(t *testing.T, m *mounted, cpu int, what string, f func() error) error {
	t.Helper()
	return within(t, m, what, func() error { return pinned(cpu, f) })
}

// pinned runs f on a thread of its own pinned to cpu. The thread ends
// with its goroutine (it is never unlocked).
func pinned(cpu int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// baseline is what a test's mounts must give back: goroutines and open
// descriptors.
type baseline struct{ goroutines, fds int }

func takeBaseline(t *testing.T) baseline {
	t.Helper()
	return baseline{runtime.NumGoroutine(), countFDs(t)}
}

// check fails the test if goroutines or descriptors are above b once
// they have had opWait to go.
func (b baseline) check(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(opWait)
	for {
		g, fds := runtime.NumGoroutine(), countFDs(t)
		if g <= b.goroutines && fds <= b.fds {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("after Unmount: %d goroutines (baseline %d), %d descriptors (baseline %d): %s\n%s",
				g, b.goroutines, fds, b.fds, listFDs(), buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listFDs says what each open descriptor is.
func listFDs() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"="+target)
	}
	return strings.Join(out, " ")
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the directory's own
}
