package kernfsim

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// lockCounts are the acquisitions a test follows: the tree lock's sides,
// the attribute lock's, and the open-file locks'.
type lockCounts struct {
	treeR, treeW, attrR, attrW, open int64
}

func countsOf(s locking.Stats) lockCounts {
	return lockCounts{s.ReadAcquisitions, s.WriteAcquisitions, s.Attr.ReadAcquisitions, s.Attr.WriteAcquisitions, s.OpenFile.WriteAcquisitions}
}

func (c lockCounts) sub(d lockCounts) lockCounts {
	return lockCounts{c.treeR - d.treeR, c.treeW - d.treeW, c.attrR - d.attrR, c.attrW - d.attrW, c.open - d.open}
}

// TestAttrLockRouting: under a strategy with an attribute lock
// (kernfs64), permission, getattr and open's permission check take it and
// not the tree lock, setattr writes under it and not under the tree's
// write side, lookups keep the tree lock, and open and release each take
// an open-file lock; under rwsem all of it is the tree lock's, as before.
func TestAttrLockRouting(t *testing.T) {
	user := Cred{Uid: 1000, Gid: 1000}
	type step struct {
		name string
		op   func(tr *Tree, w *Walker, d, f *Node)
		// want under kernfs64 and under rwsem
		kernfs64, rwsem lockCounts
	}
	steps := []step{
		{"permission", func(tr *Tree, _ *Walker, d, _ *Node) { require.NoError(t, tr.Permission(d, MayExec, user)) },
			lockCounts{attrR: 1}, lockCounts{treeR: 1}},
		{"getattr", func(tr *Tree, _ *Walker, _, f *Node) { tr.Getattr(f) },
			lockCounts{attrR: 1}, lockCounts{treeR: 1}},
		{"lookup", func(tr *Tree, _ *Walker, d, _ *Node) { testkit.Must(tr.Lookup(d, "f"))(t) },
			lockCounts{treeR: 1}, lockCounts{treeR: 1}},
		{"setattr", func(tr *Tree, _ *Walker, _, f *Node) {
			require.NoError(t, tr.Setattr(f, SetattrArgs{Valid: SetMode, Mode: 0o644}, RootCred))
		}, lockCounts{attrW: 1}, lockCounts{treeW: 1}},
		{"open+release", func(tr *Tree, _ *Walker, _, f *Node) { testkit.Must(tr.Open(f, os.O_RDONLY, user))(t).Release() },
			lockCounts{attrR: 1, open: 2}, lockCounts{treeR: 1}},
		{"walk d/f (cached)", func(_ *Tree, w *Walker, _, _ *Node) { testkit.Must(w.Resolve(user, "d/f"))(t) },
			lockCounts{treeR: 2, attrR: 2}, lockCounts{treeR: 4}}, // 2 revalidations, 2 permissions
		{"may-create", func(tr *Tree, _ *Walker, d, _ *Node) { require.NoError(t, tr.MayCreate(d, "new", RootCred)) },
			lockCounts{treeR: 1, attrR: 1}, lockCounts{treeR: 1}},
	}
	testkit.ForEachLock(t, []string{"kernfs64", "rwsem"}, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := testkit.Must(tr.Mkdir(tr.Root(), "d", 0o755))(t)
		f := testkit.Must(tr.AddAttr(d, "f", 0o644, Static("x")))(t)
		w := NewWalker(tr, WalkerOptions{})
		testkit.Must(w.Resolve(user, "d/f"))(t) // cache the dentries
		for _, s := range steps {
			before := countsOf(tr.Strategy().Stats())
			s.op(tr, w, d, f)
			got := countsOf(tr.Strategy().Stats()).sub(before)
			want := s.rwsem
			if tr.Strategy().Traits().SeparateAttrLock {
				want = s.kernfs64
			}
			if got != want {
				t.Errorf("%s: got %+v, want %+v", s.name, got, want)
			}
		}
	})
}

// TestRefWalkRefreshTakesAttrLock: with RefWalk, a walker under a
// strategy with an attribute lock refreshes each directory's inode inside
// the permission check's section of that lock, and a stat's final
// refresh takes it too; the tree lock sees only the walk's revalidations.
func TestRefWalkRefreshTakesAttrLock(t *testing.T) {
	tr := newTestTree(t, "kernfs64")
	mkpath(t, tr, "a", "b")
	w := NewWalker(tr, WalkerOptions{RefWalk: true, MountDepth: 1})
	testkit.Must(w.Stat(RootCred, "a/b"))(t)
	before := countsOf(tr.Strategy().Stats())
	testkit.Must(w.Stat(RootCred, "a/b"))(t)
	// two permission checks (root, a), the final refresh of b, getattr
	want := lockCounts{treeR: 2, attrR: 4}
	if got := countsOf(tr.Strategy().Stats()).sub(before); got != want {
		t.Fatalf("stat a/b: got %+v, want %+v", got, want)
	}
}
