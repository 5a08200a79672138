package kernfsim

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// fifth is a strategy defined here, not in locking: a reader-writer lock
// that declares whatever traits the test gives it. The tree must route it
// by those traits alone.
type fifth struct {
	mu     sync.RWMutex
	traits locking.Traits
	reads  atomic.Int64 // read-side entries
}

var _ locking.Strategy = (*fifth)(nil)

func (f *fifth) Name() string              { return "fifth" }
func (f *fifth) RLock() locking.ReadToken  { f.reads.Add(1); f.mu.RLock(); return 0 }
func (f *fifth) RUnlock(locking.ReadToken) { f.mu.RUnlock() }
func (f *fifth) Lock() error               { f.mu.Lock(); return nil }
func (f *fifth) Unlock()                   { f.mu.Unlock() }
func (f *fifth) Seal()                     {}
func (f *fifth) Grace() *locking.Grace     { return nil }
func (f *fifth) Traits() locking.Traits    { return f.traits }
func (f *fifth) Stats() locking.Stats      { return locking.Stats{} }

// TestFifthStrategyIsRoutedByTraits builds the same tree under two
// opposite sets of traits and checks the walker's read sections, its
// negative dentries and where a removal unlinks.
func TestFifthStrategyIsRoutedByTraits(t *testing.T) {
	for _, tr := range []locking.Traits{
		{ScopedReads: true, DrainBeforeUnlink: true, AcceptsWriters: true},
		{CachesNegatives: true, AcceptsWriters: true},
	} {
		t.Run("", func(t *testing.T) {
			s := &fifth{traits: tr}
			checkWalkRouting(t, s)
			checkRemoveRouting(t, s)
		})
	}
}

func checkWalkRouting(t *testing.T, s *fifth) {
	tree := New(s, Options{})
	mkpath(t, tree, "a", "b", "c")
	w := NewWalker(tree, WalkerOptions{})
	testkit.Must(w.Resolve(RootCred, "a/b/c"))(t)
	before, cached := s.reads.Load(), w.CachedDentries()
	testkit.Must(w.Resolve(RootCred, "a/b/c"))(t)
	// three components: three permission checks and three revalidations
	wantReads := int64(6)
	if s.traits.ScopedReads {
		wantReads = 1
	}
	if got := s.reads.Load() - before; got != wantReads {
		t.Errorf("read-side entries for one walk: got %d, want %d (traits %+v)", got, wantReads, s.traits)
	}
	_, err := w.Resolve(RootCred, "a/b/missing")
	testkit.WantErrno(t, err, syscall.ENOENT)
	wantNeg := int64(0)
	if s.traits.CachesNegatives {
		wantNeg = 1
	}
	if got := w.CachedDentries() - cached; got != wantNeg {
		t.Errorf("negative dentries cached: got %d, want %d (traits %+v)", got, wantNeg, s.traits)
	}
}

func checkRemoveRouting(t *testing.T, s *fifth) {
	tree := New(s, Options{})
	b := startBlockedRemoval(t, tree)
	waitDraining(t, tree, 1)
	wantNodes := int64(1) // unlinked with the deactivation
	if s.traits.DrainBeforeUnlink {
		wantNodes = 2
	}
	if got := tree.Nodes(); got != wantNodes {
		t.Errorf("nodes while the removal drains: got %d, want %d (traits %+v)", got, wantNodes, s.traits)
	}
	b.release(t)
	require.NoError(t, <-b.removed)
	if tree.Nodes() != 1 {
		t.Errorf("after the removal: %d nodes, want 1", tree.Nodes())
	}
}

func TestNewRefusesInconsistentTraits(t *testing.T) {
	for _, c := range []struct {
		what string
		s    locking.Strategy
	}{
		{"refuses writers and drains before unlink", &fifth{traits: locking.Traits{DrainBeforeUnlink: true}}},
		{"declares an attribute lock it does not have", &fifth{traits: locking.Traits{AcceptsWriters: true, SeparateAttrLock: true}}},
		{"declares open-file locks it does not have", &fifth{traits: locking.Traits{AcceptsWriters: true, OpenFileLocks: true}}},
	} {
		t.Run("", func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("New accepted a strategy that %s", c.what)
				}
			}()
			New(c.s, Options{})
		})
	}
}

// sixth is fifth with an attribute lock and open-file locks of its own,
// counting their acquisitions.
type sixth struct {
	fifth
	attrMu           sync.RWMutex
	attrReads, opens atomic.Int64
}

var (
	_ locking.AttrLocker     = (*sixth)(nil)
	_ locking.OpenFileLocker = (*sixth)(nil)
)

func (s *sixth) AttrRLock() locking.ReadToken  { s.attrReads.Add(1); s.attrMu.RLock(); return 0 }
func (s *sixth) AttrRUnlock(locking.ReadToken) { s.attrMu.RUnlock() }
func (s *sixth) AttrLock()                     { s.attrMu.Lock() }
func (s *sixth) AttrUnlock()                   { s.attrMu.Unlock() }
func (s *sixth) OpenFileLock(uint64)           { s.opens.Add(1) }
func (s *sixth) OpenFileUnlock(uint64)         {}

// TestAttrLockIsRoutedByTraits: a strategy that has an attribute lock
// and open-file locks gets permission checks and opens routed to them
// only when its traits declare them.
func TestAttrLockIsRoutedByTraits(t *testing.T) {
	for _, declared := range []bool{false, true} {
		s := &sixth{fifth: fifth{traits: locking.Traits{AcceptsWriters: true, DrainBeforeUnlink: true,
			SeparateAttrLock: declared, OpenFileLocks: declared}}}
		tree := New(s, Options{})
		f := testkit.Must(tree.AddAttr(tree.Root(), "f", 0o444, Static("x")))(t)
		reads := s.reads.Load()
		require.NoError(t, tree.Permission(f, MayRead, RootCred))
		testkit.Must(tree.Open(f, os.O_RDONLY, RootCred))(t).Release()
		treeReads, attrReads, opens := s.reads.Load()-reads, s.attrReads.Load(), s.opens.Load()
		want := [3]int64{2, 0, 0}
		if declared {
			want = [3]int64{0, 2, 2}
		}
		if got := [3]int64{treeReads, attrReads, opens}; got != want {
			t.Errorf("declared %v: tree reads, attribute reads, open-file locks: got %v, want %v", declared, got, want)
		}
	}
}
