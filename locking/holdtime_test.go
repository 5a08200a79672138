package locking

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// clockSlack is how far clock's odd rounding can move a hold.
const clockSlack = time.Nanosecond

// holdFor spins, holding whatever the caller holds, until at least d has
// passed, and returns how long it held from its first clock reading to
// its last: a lower bound of the hold the caller's lock measured.
func holdFor(d time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < d {
	}
	return time.Since(start)
}

func newWithRate(t *testing.T, name string, every int) Strategy {
	t.Helper()
	s, err := New(name, Options{HoldSampleEvery: every})
	require.NoError(t, err)
	return s
}

// TestHoldSamplerRate: one count in every is taken, and a caller that
// takes the lock k times per operation has each of its k acquisitions
// timed in its share, k dividing the rate or not.
func TestHoldSamplerRate(t *testing.T) {
	const per = 4000 // samples wanted per case
	for _, every := range []int{1, 2, 4, 64, 1024} {
		h := holdSamplerOf(every)
		if h.every() != every {
			t.Fatalf("holdSamplerOf(%d).every(): got %d", every, h.every())
		}
		taken := 0
		for n := int64(1); n <= int64(every*per); n++ {
			if h.take(n) {
				taken++
			}
		}
		if taken < per*95/100 || taken > per*105/100 {
			t.Errorf("rate %d: took %d of %d counts, want %d +- 5%%", every, taken, every*per, per)
		}
	}
	h := holdSamplerOf(64)
	for _, k := range []int{2, 3, 4, 5, 8, 12, 64} {
		byPhase := make([]int, k)
		for n := int64(1); n <= int64(64*k*500); n++ {
			if h.take(n) {
				byPhase[n%int64(k)]++
			}
		}
		for phase, got := range byPhase {
			if got < 400 || got > 600 {
				t.Errorf("period %d: phase %d timed %d times, want about 500: %v", k, phase, got, byPhase)
				break
			}
		}
	}
}

func TestHoldSampleEveryOption(t *testing.T) {
	for _, tc := range []struct{ every, want int }{{0, DefaultHoldSampleEvery}, {1, 1}, {3, 4}, {64, 64}, {MaxHoldSampleEvery, MaxHoldSampleEvery}} {
		if got := newWithRate(t, "mutex", tc.every).Stats().HoldSampleEvery; got != tc.want {
			t.Errorf("HoldSampleEvery %d: Stats says %d, want %d", tc.every, got, tc.want)
		}
	}
	for _, bad := range []int{-1, MaxHoldSampleEvery + 1} {
		if _, err := New("rwsem", Options{HoldSampleEvery: bad}); err == nil {
			t.Errorf("HoldSampleEvery %d: got nil error", bad)
		}
	}
}

// TestReadTokenCarriesStart: a timed token keeps the strategy's own token
// and gives holds exactly, across the 48-bit wrap of its clock.
func TestReadTokenCarriesStart(t *testing.T) {
	inner := ReadToken(2*maxGraceShards - 1)
	for _, start := range []int64{1, 1<<48 - 9, 1<<50 + 7} {
		tok := timedToken(inner, start)
		if !tok.timed() || tok.inner() != inner {
			t.Fatalf("start %d: timed %v, inner %d; want true, %d", start, tok.timed(), tok.inner(), inner)
		}
		if got := tok.heldUntil(start + 1000); got != 1000 {
			t.Errorf("start %d: held %d, want 1000", start, got)
		}
	}
	if inner.timed() || ReadToken(0).timed() {
		t.Error("an untimed token reads as timed")
	}
}

// TestHoldTimeExact: with every hold timed, each side's hold is at least
// what the holder measured inside it and at most the time around it;
// none's read side is not counted.
func TestHoldTimeExact(t *testing.T) {
	const d = 200 * time.Microsecond
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s := newWithRate(t, name, 1) // before Seal, every strategy takes writers
		before := time.Now()
		if err := s.Lock(); err != nil {
			t.Fatal(err)
		}
		inside := holdFor(d)
		s.Unlock()
		outer := time.Since(before)
		st := s.Stats()
		if st.WriteAcquisitions != 1 || st.WriteHeld+clockSlack < inside || st.WriteHeld > outer+clockSlack {
			t.Fatalf("write side: got %d acquisitions held %v; want 1 held %v to %v", st.WriteAcquisitions, st.WriteHeld, inside, outer)
		}

		before = time.Now()
		r := s.RLock()
		inside = holdFor(d)
		s.RUnlock(r)
		outer = time.Since(before)
		st = s.Stats()
		switch {
		case !st.ReadSideCounted && (st.ReadAcquisitions != 0 || st.ReadHeld != 0):
			t.Fatalf("read side not counted, yet %d acquisitions held %v", st.ReadAcquisitions, st.ReadHeld)
		case st.ReadSideCounted && (st.ReadAcquisitions != 1 || st.ReadHeld+clockSlack < inside || st.ReadHeld > outer+clockSlack):
			t.Fatalf("read side: got %d acquisitions held %v; want 1 held %v to %v", st.ReadAcquisitions, st.ReadHeld, inside, outer)
		}
		if g := s.Grace(); g != nil { // the timed token left the counter it entered
			graceWaitClosed(t, "a grace period after the timed reader left", graceGo(g.SynchronizeExpedited))
		}
	})
}

// TestSharedReadHoldsAdd: readers holding a shared read side at once
// each add their hold, and a reader that leaves on another goroutine (as
// one that moved to another P does) adds its hold all the same.
func TestSharedReadHoldsAdd(t *testing.T) {
	const d = 200 * time.Microsecond
	for _, name := range []string{"rwsem", "rcu"} { // the shared read sides
		t.Run("lock="+name, func(t *testing.T) {
			s := newWithRate(t, name, 1)
			r1, r2 := s.RLock(), s.RLock()
			inside := holdFor(d)
			done := make(chan struct{})
			go func() {
				s.RUnlock(r2)
				s.RUnlock(r1)
				close(done)
			}()
			<-done
			if st := s.Stats(); st.ReadAcquisitions != 2 || st.ReadHeld+2*clockSlack < 2*inside {
				t.Fatalf("got %d acquisitions held %v; want 2 held at least %v", st.ReadAcquisitions, st.ReadHeld, 2*inside)
			}
			if g := s.Grace(); g != nil {
				graceWaitClosed(t, "a grace period after both readers left", graceGo(g.SynchronizeExpedited))
			}
		})
	}
}

// TestHoldTimeSampled: at rate 16 the counts stay exact and the estimate
// is of the right size: at least half the holds' least total (every hold
// lasts at least d), at most 16 times the time they all took.
func TestHoldTimeSampled(t *testing.T) {
	const (
		every = 16
		n     = every * 256
		d     = 2 * time.Microsecond
	)
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s := newWithRate(t, name, every)
		start := time.Now()
		for range n {
			if err := s.Lock(); err != nil {
				t.Fatal(err)
			}
			holdFor(d)
			s.Unlock()
			s.RUnlock(holdRead(s, d))
		}
		wall := time.Since(start)
		st := s.Stats()
		if st.HoldSampleEvery != every || st.WriteAcquisitions != n {
			t.Fatalf("got rate %d, %d write acquisitions; want %d, %d", st.HoldSampleEvery, st.WriteAcquisitions, every, n)
		}
		checkEstimate(t, "write", st.WriteHeld, n*d/2, every*wall)
		if !st.ReadSideCounted {
			return
		}
		if st.ReadAcquisitions != n {
			t.Fatalf("got %d read acquisitions, want %d", st.ReadAcquisitions, n)
		}
		checkEstimate(t, "read", st.ReadHeld, n*d/2, every*wall)
	})
}

// holdRead enters s's read side and holds it for d.
func holdRead(s Strategy, d time.Duration) ReadToken {
	r := s.RLock()
	holdFor(d)
	return r
}

func checkEstimate(t *testing.T, side string, got, least, most time.Duration) {
	t.Helper()
	if got < least || got > most {
		t.Errorf("%s side held %v (estimated), want %v to %v", side, got, least, most)
	}
}

// TestHoldCountersConcurrent: readers and writers on several goroutines,
// snapshots taken meanwhile, every hold timed. Counts are exact, and the
// writers' holds, which exclude each other, add up to no more than the
// time they all took. Run it with -race.
func TestHoldCountersConcurrent(t *testing.T) {
	const goroutines, each = 4, 300
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s := newWithRate(t, name, 1)
		stop := make(chan struct{})
		snapped := graceGo(func() {
			for {
				select {
				case <-stop:
					return
				default:
					s.Stats()
				}
			}
		})
		start := time.Now()
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range each {
					s.RUnlock(s.RLock())
					if s.Lock() == nil {
						s.Unlock()
					}
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		close(stop)
		<-snapped
		st := s.Stats()
		wantReads := int64(goroutines * each)
		if !st.ReadSideCounted {
			wantReads = 0
		}
		if st.ReadAcquisitions != wantReads || st.WriteAcquisitions != goroutines*each {
			t.Fatalf("got %d reads, %d writes; want %d, %d", st.ReadAcquisitions, st.WriteAcquisitions, wantReads, goroutines*each)
		}
		if st.WriteHeld <= 0 || st.WriteHeld > wall+goroutines*each*clockSlack {
			t.Fatalf("writers held %v in all in %v", st.WriteHeld, wall)
		}
	})
}

// TestUtilizationOfAHeldLock: between two snapshots around one held write
// side, its utilization is at least the hold's share of the interval and
// at most 1.
func TestUtilizationOfAHeldLock(t *testing.T) {
	const d = time.Millisecond
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s := newWithRate(t, name, 1)
		before, start := s.Stats(), time.Now()
		if err := s.Lock(); err != nil {
			t.Fatal(err)
		}
		inside := holdFor(d)
		s.Unlock()
		wall := time.Since(start)
		delta := s.Stats().Sub(before)
		read, write := delta.Utilization(wall)
		if least := float64(inside-clockSlack) / float64(wall); write < least || write > 1+1e-6 || read != 0 {
			t.Fatalf("utilization: read %v, write %v; want 0, %v to 1", read, write, least)
		}
	})
}

func TestStatsSub(t *testing.T) {
	before := Stats{LockCounts: LockCounts{ReadAcquisitions: 10, ReadContended: 1, ReadWait: 5, ReadHeld: 100, WriteAcquisitions: 3, WriteContended: 2, WriteWait: 7, WriteHeld: 50},
		HoldSampleEvery: 64, ReadSideCounted: true, CountersSwitchedOn: true,
		Grace: GraceStats{GracePeriods: 4, Expedited: 1, LatencyTotal: 40, LatencyMax: 20, CallbacksQueued: 6, CallbacksRun: 5,
			Waits: 4, Waiters: 1, Pending: 1, Checks: 30}}
	after := Stats{LockCounts: LockCounts{ReadAcquisitions: 25, ReadContended: 4, ReadWait: 9, ReadHeld: 400, WriteAcquisitions: 5, WriteContended: 2, WriteWait: 17, WriteHeld: 250},
		HoldSampleEvery: 64, ReadSideCounted: true, CountersSwitchedOn: true,
		Grace: GraceStats{GracePeriods: 6, Expedited: 1, LatencyTotal: 100, LatencyMax: 35, CallbacksQueued: 9, CallbacksRun: 9,
			Waits: 7, Waiters: 0, Pending: 0, Checks: 50}}
	want := Stats{LockCounts: LockCounts{ReadAcquisitions: 15, ReadContended: 3, ReadWait: 4, ReadHeld: 300, WriteAcquisitions: 2, WriteContended: 0, WriteWait: 10, WriteHeld: 200},
		HoldSampleEvery: 64, ReadSideCounted: true, CountersSwitchedOn: true,
		Grace: GraceStats{GracePeriods: 2, Expedited: 0, LatencyTotal: 60, LatencyMax: 35, CallbacksQueued: 3, CallbacksRun: 4,
			Waits: 3, Waiters: 0, Pending: 0, Checks: 20}}
	if got := after.Sub(before); got != want {
		t.Fatalf("Sub: got %+v, want %+v", got, want)
	}
	if r, w := want.Utilization(200); r != 1.5 || w != 1 {
		t.Errorf("Utilization(200ns): got %v, %v; want 1.5, 1", r, w)
	}
	if r, w := want.Utilization(0); r != 0 || w != 0 {
		t.Errorf("Utilization(0): got %v, %v; want 0, 0", r, w)
	}
}
