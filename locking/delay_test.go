package locking

import (
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestHoldDelay: with a hold delay every hold of either side of the tree
// lock lasts at least the delay, as the counters see it, and the strategy
// keeps its name, traits and attribute and open-file locks.
func TestHoldDelay(t *testing.T) {
	const d = 200 * time.Microsecond
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s, err := New(name, Options{HoldDelay: d, HoldSampleEvery: 1})
		if err != nil {
			t.Fatal(err)
		}
		if s.Name() != name || s.Traits() != MustNew(name).Traits() {
			t.Fatalf("delayed: name %q, traits %+v", s.Name(), s.Traits())
		}
		_, isA := s.(AttrLocker)
		if isA != s.Traits().SeparateAttrLock {
			t.Fatalf("delayed: is an AttrLocker %v, SeparateAttrLock %v", isA, s.Traits().SeparateAttrLock)
		}
		s.RUnlock(s.RLock())
		if s.Lock() == nil {
			s.Unlock()
		}
		st := s.Stats()
		if st.ReadSideCounted && st.ReadHeld < d {
			t.Fatalf("read hold %v, want at least %v", st.ReadHeld, d)
		}
		if st.WriteAcquisitions == 1 && st.WriteHeld < d {
			t.Fatalf("write hold %v, want at least %v", st.WriteHeld, d)
		}
	})
	for _, bad := range []time.Duration{-1, MaxHoldDelay + 1} {
		if _, err := New("mutex", Options{HoldDelay: bad}); err == nil {
			t.Fatalf("hold delay %v: got nil error", bad)
		}
	}
}
