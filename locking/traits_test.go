package locking

import (
	"slices"
	"testing"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestTraitsAreConsistent checks each strategy's traits against what it
// does (a Grace, the attribute and open-file lock interfaces), and the
// rule that keeps removals safe: a strategy that refuses writers unlinks
// with the deactivation.
func TestTraitsAreConsistent(t *testing.T) {
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s := MustNew(name)
		tr, err := TraitsOf(name)
		if err != nil || s.Traits() != tr {
			t.Fatalf("TraitsOf: got %+v, %v; the strategy says %+v", tr, err, s.Traits())
		}
		if got := s.Grace() != nil; got != tr.GracePeriods {
			t.Fatalf("Grace() != nil is %v, GracePeriods is %v", got, tr.GracePeriods)
		}
		if !tr.AcceptsWriters && tr.DrainBeforeUnlink {
			t.Fatal("a strategy that refuses writers drains before unlink: Seal could refuse a removal halfway")
		}
		if _, ok := s.(AttrLocker); ok != tr.SeparateAttrLock {
			t.Fatalf("is an AttrLocker: %v; SeparateAttrLock is %v", ok, tr.SeparateAttrLock)
		}
		if _, ok := s.(OpenFileLocker); ok != tr.OpenFileLocks {
			t.Fatalf("is an OpenFileLocker: %v; OpenFileLocks is %v", ok, tr.OpenFileLocks)
		}
	})
	if _, err := TraitsOf("spinlock"); err == nil {
		t.Fatal("TraitsOf(spinlock): got nil error")
	}
}

func TestNamesWhere(t *testing.T) {
	all := NamesWhere(func(Traits) bool { return true })
	if !slices.Equal(all, Names) {
		t.Fatalf("NamesWhere(all): got %v, want %v", all, Names)
	}
	for _, name := range NamesWhere(func(t Traits) bool { return t.CachesNegatives }) {
		if !MustNew(name).Traits().CachesNegatives {
			t.Fatalf("NamesWhere(CachesNegatives) listed %s", name)
		}
	}
}

// countingStrategy counts read-side entries and exits.
type countingStrategy struct {
	Strategy
	in, out int
}

func (c *countingStrategy) RLock() ReadToken    { c.in++; return c.Strategy.RLock() }
func (c *countingStrategy) RUnlock(t ReadToken) { c.out++; c.Strategy.RUnlock(t) }

// TestReadSideTakesOneSide: a scope with calls inside it enters the read
// side exactly once per call (ref-walk) or once per scope (scoped reads).
func TestReadSideTakesOneSide(t *testing.T) {
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		c := &countingStrategy{Strategy: MustNew(name)}
		rs := ReadSideOf(c)
		r := rs.EnterScope()
		for range 3 {
			rs.ExitCall(rs.EnterCall())
		}
		rs.ExitScope(r)
		want := 3
		if c.Traits().ScopedReads {
			want = 1
		}
		if c.in != want || c.out != want {
			t.Fatalf("entered %d, left %d; want %d each", c.in, c.out, want)
		}
	})
}
