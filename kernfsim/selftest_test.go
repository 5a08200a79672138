package kernfsim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// The scenarios of the selftests that the kernfs series queued for Linux
// 7.4 adds, run in-process through the walker under every strategy that
// accepts writers (fusefs has the same over FUSE). The series' fifth
// scenario, netns-tagged sysfs names, has no counterpart: kernfsim's
// nodes carry no namespace tag, so a directory holds one node per name.

// statErrno is w.StatErrno's errno for path, as root.
func statErrno(w *Walker, path string) syscall.Errno {
	_, e := w.StatErrno(RootCred, path)
	return e
}

// TestSelftestNegativeDroppedOnCreate: a missing name, looked up (and
// cached negative where the strategy caches negatives), is found once it
// is created.
func TestSelftestNegativeDroppedOnCreate(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := mkpath(t, tr, "d")
		w := NewWalker(tr, WalkerOptions{})
		require.Equal(t, syscall.ENOENT, statErrno(w, "d/x"))
		cached := w.CachedDentries()
		require.Equal(t, syscall.ENOENT, statErrno(w, "d/x"), "missing name looked up again")
		require.Equal(t, cached, w.CachedDentries(), "a second lookup of a cached negative made a dentry")
		testkit.Must(tr.Mkdir(d, "x", 0o755))(t)
		require.Equal(t, syscall.Errno(0), statErrno(w, "d/x"), "name created after its negative was cached")
	})
}

// TestSelftestPositiveDroppedOnRemove: a cached name is gone once its
// node is removed, and a new node of the same name is found, not the old.
func TestSelftestPositiveDroppedOnRemove(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := mkpath(t, tr, "d")
		x := testkit.Must(tr.Mkdir(d, "x", 0o755))(t)
		w := NewWalker(tr, WalkerOptions{})
		require.Equal(t, x, testkit.Must(w.Resolve(RootCred, "d/x"))(t))
		require.NoError(t, tr.Remove(context.Background(), x))
		require.Equal(t, syscall.ENOENT, statErrno(w, "d/x"), "name removed while its dentry was cached")
		x2 := testkit.Must(tr.Mkdir(d, "x", 0o755))(t)
		require.Equal(t, x2, testkit.Must(w.Resolve(RootCred, "d/x"))(t), "name made again after a removal")
	})
}

// TestSelftestRenameUnderCachedDentry: a node renamed while its old name
// is cached is found under the new name only, with its children, and a
// node then created under the old name is found there.
func TestSelftestRenameUnderCachedDentry(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d, d2 := mkpath(t, tr, "d"), mkpath(t, tr, "d2")
		a := testkit.Must(tr.Mkdir(d, "a", 0o755))(t)
		f := testkit.Must(tr.AddAttr(a, "f", 0o444, Static("x")))(t)
		w := NewWalker(tr, WalkerOptions{})
		require.Equal(t, f, testkit.Must(w.Resolve(RootCred, "d/a/f"))(t))
		require.Equal(t, syscall.ENOENT, statErrno(w, "d2/b"))
		require.NoError(t, tr.Rename(a, d2, "b"))
		require.Equal(t, syscall.ENOENT, statErrno(w, "d/a"), "old name after a rename under its cached dentry")
		require.Equal(t, syscall.ENOENT, statErrno(w, "d/a/f"), "child through the old name after a rename")
		require.Equal(t, f, testkit.Must(w.Resolve(RootCred, "d2/b/f"))(t), "child through the new name")
		a2 := testkit.Must(tr.Mkdir(d, "a", 0o755))(t)
		require.Equal(t, a2, testkit.Must(w.Resolve(RootCred, "d/a"))(t), "new node under the old name")
		require.NoError(t, tr.Rename(a, d, "c")) // within the directory: the same parent, another name
		require.Equal(t, syscall.ENOENT, statErrno(w, "d2/b"))
		require.Equal(t, a, testkit.Must(w.Resolve(RootCred, "d/c"))(t))
	})
}

// flipState is the writer's state in TestSelftestLookupsAgainstMkdirRmdir:
// state%4 is 0 with the name absent, 1 while it is being made, 2 with it
// present (node), 3 while it is being removed.
type flipState struct {
	seq  atomic.Uint64
	node atomic.Pointer[Node]
}

// TestSelftestLookupsAgainstMkdirRmdir: readers walk to a name that a
// writer makes and removes over and over. A walk that began and ended in
// one stable state must answer that state: ENOENT while absent, the node
// made last while present. No stale answer, no error but ENOENT.
func TestSelftestLookupsAgainstMkdirRmdir(t *testing.T) {
	const readers = 2
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		rounds := 200
		if tr.Strategy().Traits().GracePeriods {
			rounds = 10 // each removal waits a grace period, which busy readers stretch
		}
		d := mkpath(t, tr, "d")
		w := NewWalker(tr, WalkerOptions{})
		var st flipState
		var done atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- readFlips(w, &st, &done)
			}()
		}
		for i := range rounds {
			st.seq.Add(1)
			x := testkit.Must(tr.Mkdir(d, "x", 0o755))(t)
			st.node.Store(x)
			st.seq.Add(1)
			if i == rounds-1 {
				break
			}
			st.seq.Add(1)
			require.NoError(t, tr.Remove(context.Background(), x))
			st.seq.Add(1)
		}
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		// Stable from now on, so each check below compares: present,
		// absent once removed, present again as a new node.
		require.NoError(t, checkFlip(w, &st, st.seq.Load()))
		st.seq.Add(1)
		require.NoError(t, tr.Remove(context.Background(), st.node.Load()))
		require.NoError(t, checkFlip(w, &st, st.seq.Add(1)))
		st.seq.Add(1)
		st.node.Store(testkit.Must(tr.Mkdir(d, "x", 0o755))(t))
		require.NoError(t, checkFlip(w, &st, st.seq.Add(1)))
	})
}

// readFlips walks d/x until done, at least 100 times, and checks every
// walk that saw one stable state throughout.
func readFlips(w *Walker, st *flipState, done *atomic.Bool) error {
	for i := 0; i < 100 || !done.Load(); i++ {
		s1 := st.seq.Load()
		if s1%2 != 0 {
			continue
		}
		if err := checkFlip(w, st, s1); err != nil {
			return err
		}
	}
	return nil
}

// checkFlip walks d/x and, if the state is still s1 (stable) afterwards,
// checks the answer against it.
func checkFlip(w *Walker, st *flipState, s1 uint64) error {
	want := st.node.Load()
	n, e := w.ResolveErrno(RootCred, "d/x")
	if st.seq.Load() != s1 {
		return nil
	}
	switch {
	case s1%4 == 0 && e != syscall.ENOENT:
		return fmt.Errorf("state %d (absent): walk got node %v, errno %v; want ENOENT", s1, n, e)
	case s1%4 == 2 && (e != 0 || n != want):
		return fmt.Errorf("state %d (present): walk got node %p, errno %v; want node %p", s1, n, e, want)
	}
	return nil
}
