// Package testkit holds what the tests of every package share.
//
// It has a subtest per lock strategy, error checks, the rule for tests
// that need FUSE, a buffer safe to read while a process writes it, and
// polling.
//
// It imports only the standard library and testify, so that the tests of
// every package, locking's included, can use it. Fixtures that need a
// tree live in package testtree.
//
// Lock ordering: SyncBuffer.mu is a leaf.
package testkit

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ForEachLock runs f as a subtest named "lock=NAME" for each name in
// locks (locking.Names, or a subset from locking.NamesWhere).
func ForEachLock(t *testing.T, locks []string, f func(t *testing.T, lock string)) {
	t.Helper()
	for _, l := range locks {
		t.Run("lock="+l, func(t *testing.T) { f(t, l) })
	}
}

// Must returns v, failing the test given to the returned func on err:
//
//	d := testkit.Must(tr.Mkdir(root, "a", 0o755))(t)
//
// It calls t.Helper, which takes a lock of t's: keep it out of timed
// loops.
func Must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			require.NoError(t, err)
		}
		return v
	}
}

// WantErrno checks that err is a *fs.PathError carrying errno want.
func WantErrno(t testing.TB, err error, want syscall.Errno) {
	t.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("got error %v (%T), want *fs.PathError with %v", err, err, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}

// RequireFUSE skips a test that needs FUSE where there is no /dev/fuse or
// the test does not run as root, but fails it when the CI environment
// variable is set: CI machines must run the FUSE tests.
func RequireFUSE(t testing.TB) {
	t.Helper()
	_, err := os.Stat("/dev/fuse")
	switch {
	case err == nil && os.Geteuid() == 0:
		return
	case os.Getenv("CI") != "":
		t.Fatalf("FUSE tests need /dev/fuse and root under CI (stat /dev/fuse: %v, euid %d)", err, os.Geteuid())
	default:
		t.Skipf("no FUSE here (stat /dev/fuse: %v, euid %d)", err, os.Geteuid())
	}
}

// RequireTool returns the path of a command a test runs. A missing one
// skips the test, but fails it when the CI environment variable is set:
// .ci/run installs every tool the tests run.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path
	case os.Getenv("CI") != "":
		t.Fatalf("%s is missing (.ci/run installs it): %v", name, err)
	default:
		t.Skipf("%s is missing: %v", name, err)
	}
	return ""
}

// SyncBuffer is a bytes.Buffer safe for one writer and concurrent
// readers: a child process's stderr that the test reads while it runs.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // protected by mu
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitFor calls cond every tick, on the calling goroutine, until it
// returns nil, and fails the test with cond's last error once within has
// passed. The deadline only detects a hang: nothing waits on it.
//
// Prefer require.EventuallyWithT. WaitFor is for the conditions that do
// not fit it: those that count goroutines (EventuallyWithT runs the
// condition on a goroutine of its own) or that call t.
func WaitFor(t testing.TB, within, tick time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(tick)
	}
}
