package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// The scenarios of the selftests that the kernfs series queued for Linux
// 7.4 adds, over FUSE on every transport, under every strategy that
// accepts writers (kernfsim has the same in-process). The tree changes
// in-process, as a kernel subsystem changes sysfs, and the kernel's
// dentries must follow. Netns-tagged names have no counterpart: kernfsim's
// nodes carry no namespace tag.

// forEachSelftestMount mounts a served tree per transport and writer
// strategy and calls f with it and an empty directory "selftest" in it.
func forEachSelftestMount(t *testing.T, f func(t *testing.T, tr *kernfsim.Tree, mnt string, dir *kernfsim.Node)) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		testkit.ForEachLock(t, testtree.Writers, func(t *testing.T, lock string) {
			tr, _ := newServedTree(t, lock)
			m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
			dir := testkit.Must(tr.Mkdir(tr.Root(), "selftest", 0o755))(t)
			f(t, tr, filepath.Join(m.Mountpoint, "selftest"), dir)
		})
	})
}

// statIno is the inode number at path, or the errno of stat.
func statIno(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

func requireMissing(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: stat %s got %v, want ENOENT", what, path, err)
	}
}

func requireIno(t *testing.T, path string, want uint64, what string) {
	t.Helper()
	ino, err := statIno(path)
	if err != nil || ino != want {
		t.Fatalf("%s: stat %s got inode %d, %v; want inode %d", what, path, ino, err, want)
	}
}

// TestSelftestNegativeDroppedOnCreate: a missing name, looked up twice
// (the kernel keeps it negative where the strategy caches negatives), is
// found once it is created.
func TestSelftestNegativeDroppedOnCreate(t *testing.T) {
	forEachSelftestMount(t, func(t *testing.T, tr *kernfsim.Tree, mnt string, dir *kernfsim.Node) {
		x := filepath.Join(mnt, "x")
		requireMissing(t, x, "before create")
		requireMissing(t, x, "again")
		n := testkit.Must(tr.Mkdir(dir, "x", 0o755))(t)
		requireIno(t, x, n.Ino(), "created after its negative was cached")
	})
}

// TestSelftestPositiveDroppedOnRemove: a name found is gone once its node
// is removed, and a new node of that name is found, not the old one.
func TestSelftestPositiveDroppedOnRemove(t *testing.T) {
	forEachSelftestMount(t, func(t *testing.T, tr *kernfsim.Tree, mnt string, dir *kernfsim.Node) {
		x := filepath.Join(mnt, "x")
		n := testkit.Must(tr.Mkdir(dir, "x", 0o755))(t)
		requireIno(t, x, n.Ino(), "made")
		require.NoError(t, tr.Remove(context.Background(), n))
		requireMissing(t, x, "removed while its dentry was cached")
		n2 := testkit.Must(tr.Mkdir(dir, "x", 0o755))(t)
		requireIno(t, x, n2.Ino(), "made again after a removal")
	})
}

// TestSelftestRenameUnderCachedDentry: a directory renamed while its old
// name is cached is found under the new name only, with its children, and
// a node then made under the old name is found there.
func TestSelftestRenameUnderCachedDentry(t *testing.T) {
	forEachSelftestMount(t, func(t *testing.T, tr *kernfsim.Tree, mnt string, dir *kernfsim.Node) {
		d2 := testkit.Must(tr.Mkdir(dir, "d2", 0o755))(t)
		a := testkit.Must(tr.Mkdir(dir, "a", 0o755))(t)
		f := testkit.Must(tr.AddAttr(a, "f", 0o444, kernfsim.Static("x")))(t)
		requireIno(t, filepath.Join(mnt, "a/f"), f.Ino(), "before rename")
		requireMissing(t, filepath.Join(mnt, "d2/b"), "new name before rename")
		require.NoError(t, tr.Rename(a, d2, "b"))
		requireMissing(t, filepath.Join(mnt, "a"), "old name after rename")
		requireMissing(t, filepath.Join(mnt, "a/f"), "child through the old name")
		requireIno(t, filepath.Join(mnt, "d2/b/f"), f.Ino(), "child through the new name")
		a2 := testkit.Must(tr.Mkdir(dir, "a", 0o755))(t)
		requireIno(t, filepath.Join(mnt, "a"), a2.Ino(), "new node under the old name")
	})
}

// TestSelftestLookupsAgainstMkdirRmdir: clients stat a name that the
// tree makes and removes over and over. A stat that began and ended in
// one stable state must answer that state (ENOENT while absent, the inode
// made last while present); at the end, stable, each state is checked.
func TestSelftestLookupsAgainstMkdirRmdir(t *testing.T) {
	const rounds, readers = 30, 2
	forEachSelftestMount(t, func(t *testing.T, tr *kernfsim.Tree, mnt string, dir *kernfsim.Node) {
		var seq, ino atomic.Uint64 // seq%4: 0 absent, 1 making, 2 present (ino), 3 removing
		x := filepath.Join(mnt, "x")
		check := func(s1 uint64) error {
			want := ino.Load()
			got, err := statIno(x)
			switch {
			case seq.Load() != s1:
			case s1%4 == 0 && !errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("state %d (absent): stat got inode %d, %v; want ENOENT", s1, got, err)
			case s1%4 == 2 && (err != nil || got != want):
				return fmt.Errorf("state %d (present): stat got inode %d, %v; want inode %d", s1, got, err, want)
			}
			return nil
		}
		var done atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20 || !done.Load(); i++ {
					if s1 := seq.Load(); s1%2 == 0 {
						if err := check(s1); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
		flip := func(n *kernfsim.Node) *kernfsim.Node {
			seq.Add(1)
			if n != nil {
				require.NoError(t, tr.Remove(context.Background(), n))
				n = nil
			} else {
				n = testkit.Must(tr.Mkdir(dir, "x", 0o755))(t)
				ino.Store(n.Ino())
			}
			seq.Add(1)
			return n
		}
		var n *kernfsim.Node
		for range 2 * rounds {
			n = flip(n)
		}
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for range 3 { // stable: absent, present, absent
			require.NoError(t, check(seq.Load()))
			n = flip(n)
		}
	})
}
