package locking

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// testGrace keeps the grace periods of percpu's writers short.
var testGrace = GraceConfig{Tick: 100 * time.Microsecond}

// lockingReaders are the strategies whose read side excludes writers
// (every read section is a lock, not a scope) and that take writers.
var lockingReaders = NamesWhere(func(t Traits) bool { return t.AcceptsWriters && !t.ScopedReads })

// writerNames are the strategies that take writers after Seal.
var writerNames = NamesWhere(func(t Traits) bool { return t.AcceptsWriters })

func newTestStrategy(t testing.TB, name string) Strategy {
	t.Helper()
	s, err := New(name, Options{Grace: testGrace})
	require.NoError(t, err)
	s.Seal()
	return s
}

// forEachProcs runs f with GOMAXPROCS as it is and with 1.
func forEachProcs(t *testing.T, f func(t *testing.T)) {
	for _, procs := range []int{0, 1} {
		t.Run(fmt.Sprintf("gomaxprocs=%d", procs), func(t *testing.T) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			f(t)
		})
	}
}

// TestWritersExcludeReaders: no reader is inside while a writer is, and
// no two writers are inside at once, under every strategy whose readers
// lock.
func TestWritersExcludeReaders(t *testing.T) {
	const readers, writers, rounds = 4, 2, 300
	forEachProcs(t, func(t *testing.T) {
		testkit.ForEachLock(t, lockingReaders, func(t *testing.T, name string) {
			s := newTestStrategy(t, name)
			var inR, inW, bad atomic.Int32
			var wg sync.WaitGroup
			for range readers {
				wg.Go(func() {
					for i := range rounds {
						r := s.RLock()
						inR.Add(1)
						if inW.Load() != 0 {
							bad.Add(1)
						}
						if i%4 == 0 {
							runtime.Gosched()
						}
						inR.Add(-1)
						s.RUnlock(r)
					}
				})
			}
			for range writers {
				wg.Go(func() {
					for range rounds / 10 {
						if err := s.Lock(); err != nil {
							t.Error(err)
							return
						}
						if inW.Add(1) != 1 || inR.Load() != 0 {
							bad.Add(1)
						}
						runtime.Gosched()
						inW.Add(-1)
						s.Unlock()
					}
				})
			}
			wg.Wait()
			if n := bad.Load(); n != 0 {
				t.Fatalf("%d times a reader and a writer, or two writers, were inside at once", n)
			}
		})
	})
}

// progress runs busy goroutines, each looping on op until stopped, and
// fails t unless k calls of other finish within graceDeadline.
func progress(t *testing.T, busy int, op func(i int), k int, other func()) {
	t.Helper()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range busy {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				op(i)
			}
		})
	}
	done := graceGo(func() {
		for range k {
			other()
		}
	})
	select {
	case <-done:
	case <-time.After(graceDeadline):
		t.Errorf("%d operations did not finish in %v among %d busy goroutines", k, graceDeadline, busy)
	}
	stop.Store(true)
	wg.Wait()
	<-done
}

// TestWriterProgressWithContinuousReaders: readers that never stop coming
// do not keep a writer out (writer preference, bias revocation, percpu's
// block).
func TestWriterProgressWithContinuousReaders(t *testing.T) {
	forEachProcs(t, func(t *testing.T) {
		testkit.ForEachLock(t, writerNames, func(t *testing.T, name string) {
			s := newTestStrategy(t, name)
			progress(t, runtime.GOMAXPROCS(0)+1, func(i int) {
				r := s.RLock()
				if i%8 == 0 {
					runtime.Gosched()
				}
				s.RUnlock(r)
			}, 20, func() {
				if s.Lock() == nil {
					s.Unlock()
				}
			})
		})
	})
}

// TestReaderProgressWithContinuousWriters: writers that never stop coming
// do not keep readers out: the readers waiting when a writer leaves get
// in before the next.
func TestReaderProgressWithContinuousWriters(t *testing.T) {
	forEachProcs(t, func(t *testing.T) {
		testkit.ForEachLock(t, lockingReaders, func(t *testing.T, name string) {
			s := newTestStrategy(t, name)
			progress(t, 2, func(int) {
				if s.Lock() == nil {
					runtime.Gosched()
					s.Unlock()
				}
			}, 200, func() { s.RUnlock(s.RLock()) })
		})
	})
}

// tortureData is what the torture's writers change and its readers read,
// in plain fields: only the strategy orders them, so the race detector
// sees any reader or writer the strategy lets in out of turn.
type tortureData struct {
	a, b int
}

// TestStrategyTorture: readers and writers of plain data under every
// strategy whose readers lock; readers must see a and b equal, and (run
// with -race) no access may race. Counts must come out exact.
func TestStrategyTorture(t *testing.T) {
	const readers, writers, rounds = 3, 2, 400
	forEachProcs(t, func(t *testing.T) {
		testkit.ForEachLock(t, lockingReaders, func(t *testing.T, name string) {
			s := newTestStrategy(t, name)
			var d tortureData
			var torn atomic.Int64
			var wg sync.WaitGroup
			for range readers {
				wg.Go(func() {
					for i := range rounds {
						r := s.RLock()
						a := d.a
						if i%16 == 0 {
							runtime.Gosched()
						}
						if d.b != a {
							torn.Add(1)
						}
						s.RUnlock(r)
					}
				})
			}
			for range writers {
				wg.Go(func() {
					for i := range rounds / 8 {
						if err := s.Lock(); err != nil {
							t.Error(err)
							return
						}
						d.a++
						if i%4 == 0 {
							runtime.Gosched()
						}
						d.b++
						s.Unlock()
					}
				})
			}
			wg.Wait()
			st := s.Stats()
			if torn.Load() != 0 || d.a != writers*rounds/8 || d.b != d.a {
				t.Fatalf("readers saw %d torn values; a=%d b=%d, want %d", torn.Load(), d.a, d.b, writers*rounds/8)
			}
			if st.ReadAcquisitions != readers*rounds || st.WriteAcquisitions != writers*rounds/8 {
				t.Fatalf("counted %d reads, %d writes; want %d, %d", st.ReadAcquisitions, st.WriteAcquisitions, readers*rounds, writers*rounds/8)
			}
		})
	})
}

// TestStrategiesDoNotAllocate: entering and leaving either side
// allocates nothing once warm (percpu's writer is warm once its rcu_sync
// is past its first grace period).
func TestStrategiesDoNotAllocate(t *testing.T) {
	testkit.ForEachLock(t, writerNames, func(t *testing.T, name string) {
		s := newTestStrategy(t, name)
		if got := testing.AllocsPerRun(100, func() { s.RUnlock(s.RLock()) }); got != 0 {
			t.Errorf("read side: %v allocations", got)
		}
		require.NoError(t, s.Lock())
		if got := testing.AllocsPerRun(100, func() {
			s.Unlock()
			if s.Lock() != nil {
				t.Fatal("Lock failed")
			}
		}); got > 0 && !s.Traits().GracePeriods {
			t.Errorf("write side: %v allocations", got)
		}
		s.Unlock()
	})
}
