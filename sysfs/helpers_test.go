package sysfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// fastGrace keeps rcu removals quick in tests: a 100us tick.
var fastGrace = locking.GraceConfig{Tick: 100_000}

// newTestTree returns an empty tree under the named strategy. Under none
// it is not sealed, so fixtures can still be built.
func newTestTree(t testing.TB, lock string) *kernfsim.Tree {
	t.Helper()
	s, err := locking.New(lock, locking.Options{Grace: fastGrace})
	if err != nil {
		t.Fatal(err)
	}
	return kernfsim.New(s, kernfsim.Options{})
}

// writers lists the strategies that accept writers after construction.
var writers = locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })

// forEachLock runs f as a subtest per strategy in locks.
func forEachLock(t *testing.T, locks []string, f func(t *testing.T, lock string)) {
	for _, l := range locks {
		t.Run("lock="+l, func(t *testing.T) { f(t, l) })
	}
}

// must returns v, failing the test given to the returned func on err:
// must(tr.Mkdir(d, "a", 0o755))(t).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// noErr fails the test on err.
func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErrno checks that err is a *fs.PathError carrying errno want.
func wantErrno(t testing.TB, err error, want syscall.Errno) {
	t.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("got error %v (%T), want *fs.PathError with %v", err, err, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}

// rootWrite writes data to the attribute at path as root, the way a
// shell's echo would, and returns the open's or the write's error. It may
// run off the test's goroutine.
func rootWrite(w *kernfsim.Walker, path, data string) error {
	f, err := w.Open(kernfsim.RootCred, path, os.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Release()
	_, err = f.Write(context.Background(), []byte(data))
	return err
}
