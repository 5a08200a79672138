package kernfsim

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// TestRevalidateTakesNoTreeLock: every revalidation is counted
// (Tree.Revalidations); under a strategy with Traits.LocklessRevalidate
// (kernfs74) none enters the tree lock's read side, under the others
// each enters it once (uncounted under none, whose readers take nothing).
func TestRevalidateTakesNoTreeLock(t *testing.T) {
	const calls = 10
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := mkpath(t, tr, "d")
		f := testkit.Must(tr.AddAttr(d, "f", 0o444, Static("x")))(t)
		_, rev, _ := tr.LookupRev(d, "missing")
		s := tr.Strategy()
		before, revals := s.Stats(), tr.Revalidations()
		for range calls / 2 {
			require.True(t, tr.Revalidate(d, "f", f, 0))
			require.True(t, tr.Revalidate(d, "missing", nil, rev))
		}
		got := s.Stats().Sub(before)
		if n := tr.Revalidations() - revals; n != calls {
			t.Fatalf("Revalidations: got %d more, want %d", n, calls)
		}
		want := int64(calls)
		if tr := s.Traits(); tr.LocklessRevalidate || !s.Stats().ReadSideCounted {
			want = 0
		}
		if got.ReadAcquisitions != want {
			t.Fatalf("%d revalidations took the read side %d times, want %d", calls, got.ReadAcquisitions, want)
		}
	})
}

// TestWalkLockCountsKernfs74: a cached walk of d/f under kernfs64 reads
// the tree rwsem once per revalidation and the attribute rwsem once per
// permission check; under kernfs74 its revalidations take nothing, so
// the tree rwsem is not read at all, and a lookup of a new name still
// reads it once.
func TestWalkLockCountsKernfs74(t *testing.T) {
	user := Cred{Uid: 1000, Gid: 1000}
	want := map[string]lockCounts{"kernfs64": {treeR: 2, attrR: 2}, "kernfs74": {attrR: 2}}
	testkit.ForEachLock(t, []string{"kernfs64", "kernfs74"}, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := mkpath(t, tr, "d")
		testkit.Must(tr.AddAttr(d, "f", 0o444, Static("x")))(t)
		w := NewWalker(tr, WalkerOptions{})
		testkit.Must(w.Resolve(user, "d/f"))(t)
		before, revals := countsOf(tr.Strategy().Stats()), tr.Revalidations()
		testkit.Must(w.Resolve(user, "d/f"))(t)
		if got := countsOf(tr.Strategy().Stats()).sub(before); got != want[lock] {
			t.Fatalf("cached walk: got %+v, want %+v", got, want[lock])
		}
		if n := tr.Revalidations() - revals; n != 2 {
			t.Fatalf("cached walk: %d revalidations, want 2", n)
		}
		testkit.Must(tr.AddAttr(d, "g", 0o444, Static("y")))(t)
		before = countsOf(tr.Strategy().Stats())
		testkit.Must(w.Resolve(user, "d/g"))(t) // d revalidated, g looked up
		if got := countsOf(tr.Strategy().Stats()).sub(before).treeR; got != want[lock].treeR/2+1 {
			t.Fatalf("walk to a new name: %d tree reads, want %d", got, want[lock].treeR/2+1)
		}
	})
}

// TestReaddirReadSidePerEntry: under Traits.ReaddirPerEntry (kernfs74) a
// listing of n entries enters the read side n+1 times (the last finds
// none after the n-th); under the others once.
func TestReaddirReadSidePerEntry(t *testing.T) {
	const n = 5
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := mkpath(t, tr, "d")
		for i := range n {
			testkit.Must(tr.AddAttr(d, fmt.Sprint("f", i), 0o444, Static("x")))(t)
		}
		s := tr.Strategy()
		before := s.Stats()
		got := 0
		require.NoError(t, tr.Readdir(d, 0, func(Dirent) bool { got++; return true }))
		require.Equal(t, n, got)
		want := int64(1)
		switch {
		case !s.Stats().ReadSideCounted:
			want = 0
		case s.Traits().ReaddirPerEntry:
			want = n + 1
		}
		if acq := s.Stats().Sub(before).ReadAcquisitions; acq != want {
			t.Fatalf("readdir of %d entries took the read side %d times, want %d", n, acq, want)
		}
	})
}

// TestReaddirResumesByKey: a listing whose callback adds and removes
// other entries (it runs with no lock held) emits every entry present
// throughout exactly once, in offset order, and never one removed before
// the listing reached it; resuming at an entry's offset continues after
// it. It holds under every strategy; under kernfs74 it checks the
// resumption by (hash, name) key.
func TestReaddirResumesByKey(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := mkpath(t, tr, "d")
		var all []Dirent
		for i := range 20 {
			testkit.Must(tr.AddAttr(d, fmt.Sprint("f", i), 0o444, Static("x")))(t)
		}
		require.NoError(t, tr.Readdir(d, 0, func(e Dirent) bool { all = append(all, e); return true }))
		require.Len(t, all, 20)
		victim := all[len(all)-1]
		var got []string
		i := 0
		require.NoError(t, tr.Readdir(d, 0, func(e Dirent) bool {
			got = append(got, e.Name)
			if i == 0 {
				v := testkit.Must(tr.Lookup(d, victim.Name))(t)
				require.NoError(t, tr.Remove(context.Background(), v))
			}
			testkit.Must(tr.AddAttr(d, fmt.Sprint("new", i), 0o444, Static("x")))(t)
			i++
			return true
		}))
		for _, e := range all[:len(all)-1] {
			if c := countOf(got, e.Name); c != 1 {
				t.Fatalf("entry %s present throughout listed %d times: %v", e.Name, c, got)
			}
		}
		if slices.Contains(got, victim.Name) {
			t.Fatalf("entry %s removed before the listing reached it was listed", victim.Name)
		}
		var rest []Dirent
		require.NoError(t, tr.Readdir(d, all[9].Off, func(e Dirent) bool { rest = append(rest, e); return e.Off <= all[12].Off }))
		if len(rest) == 0 || rest[0].Off <= all[9].Off || !slices.ContainsFunc(rest, func(e Dirent) bool { return e.Name == all[10].Name }) {
			t.Fatalf("resumed at %s's offset %d: got %v", all[9].Name, all[9].Off, rest)
		}
	})
}

func countOf(names []string, name string) int {
	c := 0
	for _, n := range names {
		if n == name {
			c++
		}
	}
	return c
}
