package uring_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/posixtest"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// The child process TestPosix starts runs posixtest case $posixCaseEnv
// on directory $posixDirEnv.
const (
	posixCaseEnv = "URING_POSIXTEST_CASE"
	posixDirEnv  = "URING_POSIXTEST_DIR"
)

// posixOptions mounts go-fuse's loopback file system as go-fuse's own
// TestPosix does (fs/simple_test.go: locks, 1 s caches), READDIRPLUS on
// or off.
func posixOptions(readDirPlus bool) fuse.MountOptions {
	return fuse.MountOptions{EnableLocks: true, DisableReadDirPlus: !readDirPlus}
}

// posixCases are posixtest.All's names, sorted.
func posixCases() []string {
	var names []string
	for name := range posixtest.All {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// TestPosixClient is TestPosix's child process: one posixtest case, on a
// mount of the parent's. Run alone, it skips.
func TestPosixClient(t *testing.T) {
	name := os.Getenv(posixCaseEnv)
	if name == "" {
		t.Skip("a child process of TestPosix")
	}
	posixtest.All[name](t, os.Getenv(posixDirEnv))
}

// TestPosix runs go-fuse's posixtest.All against go-fuse's loopback file
// system over each transport, with READDIRPLUS on (go-fuse's default)
// and off, and over io_uring with DeferTaskRun too, each case on a mount
// of its own, its client a child process (this test binary again), which
// shares nothing with the server.
func TestPosix(t *testing.T) {
	type variant struct {
		cfg uring.Config
		rdp bool
	}
	var variants []variant
	for _, tp := range transports(t) {
		variants = append(variants, variant{uring.Config{Only: tp}, true}, variant{uring.Config{Only: tp}, false})
		if tp == uring.URing {
			variants = append(variants, variant{uring.Config{Only: tp, DeferTaskRun: true}, true})
		}
	}
	for _, v := range variants {
		t.Run(fmt.Sprintf("transport=%s/readdirplus=%v/defer=%v", v.cfg.Only, v.rdp, v.cfg.DeferTaskRun), func(t *testing.T) {
			for _, name := range posixCases() {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					m := mount(t, nil, posixOptions(v.rdp), v.cfg)
					runPosixChild(t, m, name)
				})
			}
		})
	}
}

// runPosixChild runs case name in a child process on m, within a
// deadline past which the connection is aborted.
func runPosixChild(t *testing.T, m *mounted, name string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPosixClient$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), posixCaseEnv+"="+name, posixDirEnv+"="+m.mnt,
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0") // a -race child would wait 1 s to exit
	abort := time.AfterFunc(2*opWait, func() { uring.Abort(m.srv); cmd.Process.Kill() })
	out, err := cmd.CombinedOutput()
	if !abort.Stop() {
		t.Fatalf("the client did not end within %v: connection aborted\n%s", 2*opWait, out)
	}
	switch {
	case err != nil:
		t.Errorf("%v\n%s", err, out)
	case strings.Contains(string(out), "--- SKIP: TestPosixClient"):
		t.Skipf("%s", out)
	case !strings.Contains(string(out), "--- PASS: TestPosixClient"):
		t.Errorf("the client did not run the case:\n%s", out)
	}
}

// TestPosixInProcess runs posixtest.All with its clients in this process
// (READDIRPLUS on), while another goroutine collects garbage without
// pause: every os.Open registers with the netpoller, and a POLL that
// reached the server would deadlock the process with the collector. It
// proves the prime, and checks that the queues saw no POLL but its own.
func TestPosixInProcess(t *testing.T) {
	for _, tp := range transports(t) {
		t.Run("transport="+string(tp), func(t *testing.T) {
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				for {
					select {
					case <-stop:
						return
					default:
						runtime.GC()
					}
				}
			}()
			defer func() { close(stop); <-stopped }()
			for _, name := range posixCases() {
				t.Run(name, func(t *testing.T) {
					m := mount(t, nil, posixOptions(true), uring.Config{Only: tp})
					abort := time.AfterFunc(2*opWait, func() { uring.Abort(m.srv) })
					defer abort.Stop()
					posixtest.All[name](t, m.mnt)
					if tp == uring.URing && m.srv.Polls() != 1 {
						t.Errorf("the queues answered %d POLL requests, want 1 (the prime's)", m.srv.Polls())
					}
				})
			}
		})
	}
}
