package fusefs

import (
	"sync/atomic"
	"testing"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// fifth is a strategy defined here, not in locking: an rwsem that declares
// the traits the test gives it and counts read-side entries.
type fifth struct {
	locking.Strategy
	traits locking.Traits
	reads  atomic.Int64
}

func (f *fifth) Traits() locking.Traits { return f.traits }
func (f *fifth) RLock() locking.ReadToken {
	f.reads.Add(1)
	return f.Strategy.RLock()
}

// TestNodeidsResolveByTraits: the server resolves nodeids under the read
// side exactly when the strategy's reads are not scoped, whatever its name.
func TestNodeidsResolveByTraits(t *testing.T) {
	for _, scoped := range []bool{false, true} {
		s := &fifth{Strategy: locking.MustNew("rwsem"), traits: locking.Traits{ScopedReads: scoped, AcceptsWriters: true, DrainBeforeUnlink: true}}
		srv := New(kernfsim.New(s, kernfsim.Options{}), Options{})
		before := s.reads.Load()
		if srv.node(1) == nil {
			t.Fatal("the root's nodeid did not resolve")
		}
		want := int64(1)
		if scoped {
			want = 0
		}
		if got := s.reads.Load() - before; got != want {
			t.Errorf("scoped reads %v: nodeid resolution entered the read side %d times, want %d", scoped, got, want)
		}
		srv.Close()
	}
}
