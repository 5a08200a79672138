package locking

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/pshard"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// graceDeadline bounds every wait in these tests; it only detects hangs.
const graceDeadline = 20 * time.Second

// graceTestTick keeps normal grace periods short in tests.
const graceTestTick = time.Millisecond

// graceWaitUntil polls cond until it holds, failing the test after
// graceDeadline. cond runs on a goroutine of its own.
func graceWaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, graceDeadline, 100*time.Microsecond, "timed out waiting until %s", what)
}

// graceWaitClosed waits for ch to be closed, failing the test after
// graceDeadline.
func graceWaitClosed(t testing.TB, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(graceDeadline):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// graceIsClosed reports whether ch is closed, without waiting.
func graceIsClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// graceGo runs f on a goroutine and returns a channel closed when it returns.
func graceGo(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

// graceIdle reports whether the engine has no ticker and no worker.
func graceIdle(g *Grace) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.ticking && !g.working
}

// graceWaitIdle waits until g has stopped its goroutines, then until the
// process has no more goroutines than base.
func graceWaitIdle(t testing.TB, g *Grace, base int) {
	t.Helper()
	graceWaitUntil(t, "the engine is idle", func() bool { return graceIdle(g) })
	// On the test's goroutine: graceWaitUntil's own would be counted.
	testkit.WaitFor(t, graceDeadline, 100*time.Microsecond, func() error {
		if n := runtime.NumGoroutine(); n > base {
			return fmt.Errorf("timed out waiting until at most %d goroutines: %d", base, n)
		}
		return nil
	})
}

// graceKinds are the two ways to wait for a grace period.
var graceKinds = []struct {
	name string
	sync func(*Grace)
}{
	{"normal", (*Grace).Synchronize},
	{"expedited", (*Grace).SynchronizeExpedited},
}

func TestNewGraceConfig(t *testing.T) {
	tests := []struct {
		cfg              GraceConfig
		wantShards       int
		wantTick, wantEx time.Duration
	}{
		{GraceConfig{}, defaultShards(), defaultTick, 0},
		{GraceConfig{Shards: 1, Tick: time.Second, ExpediteCost: time.Microsecond}, 1, time.Second, time.Microsecond},
		{GraceConfig{Shards: 5, ExpediteCost: -1}, 8, defaultTick, 0},
		{GraceConfig{Shards: 1 << 20}, maxGraceShards, defaultTick, 0},
	}
	for _, tt := range tests {
		g := NewGrace(tt.cfg)
		if got := len(g.ctr) / 2; got != tt.wantShards {
			t.Errorf("NewGrace(%+v): got %d shards, want %d", tt.cfg, got, tt.wantShards)
		}
		if g.tick != tt.wantTick || g.cost != tt.wantEx {
			t.Errorf("NewGrace(%+v): got tick %v cost %v, want %v %v", tt.cfg, g.tick, g.cost, tt.wantTick, tt.wantEx)
		}
	}
}

func TestGraceReadLockAllocs(t *testing.T) {
	g := NewGrace(GraceConfig{})
	if n := testing.AllocsPerRun(1000, func() { g.ReadUnlock(g.ReadLock()) }); n != 0 {
		t.Errorf("ReadLock+ReadUnlock: got %v allocs, want 0", n)
	}
}

// TestGraceSynchronizeWaitsForOlderReaders checks both kinds: the grace
// period waits for a reader that entered before it, and not for one that
// entered after its flip.
func TestGraceSynchronizeWaitsForOlderReaders(t *testing.T) {
	for _, k := range graceKinds {
		t.Run("kind="+k.name, func(t *testing.T) {
			g := NewGrace(GraceConfig{Tick: graceTestTick})
			older := g.ReadLock()
			phase := g.phase.Load()
			done := graceGo(func() { k.sync(g) })
			graceWaitUntil(t, "the grace period flips", func() bool { return g.phase.Load() != phase })
			newer := g.ReadLock()

			// Had it ignored the older reader, any of these checks would end it.
			checks := g.Stats().Checks
			graceWaitUntil(t, "three more checks", func() bool {
				return g.Stats().Checks >= checks+3 || graceIsClosed(done)
			})
			if st := g.Stats(); st.GracePeriods != 0 || graceIsClosed(done) {
				t.Fatalf("returned with an older reader inside: %+v", st)
			}
			g.ReadUnlock(older)
			graceWaitClosed(t, "Synchronize with only a newer reader inside", done)
			g.ReadUnlock(newer)
			if st := g.Stats(); st.GracePeriods != 1 || st.Waits != 1 || st.Waiters != 0 {
				t.Errorf("got %+v, want 1 grace period, 1 wait, 0 waiters", st)
			}
		})
	}
}

// TestGraceWaitsForStraggler checks step 1 of a grace period: a reader that
// read the phase before a flip and entered after it (preempted in between)
// sits on the inactive index, and the next grace period must wait for it.
func TestGraceWaitsForStraggler(t *testing.T) {
	for _, k := range graceKinds {
		t.Run("kind="+k.name, func(t *testing.T) {
			g := NewGrace(GraceConfig{Tick: graceTestTick})
			idx := g.phase.Load() & 1 // the straggler reads the phase...
			g.SynchronizeExpedited()  // ...a grace period flips it...
			straggler := ReadToken(pshard.Of(g.mask)<<1 | idx)
			g.ctr[straggler].n.Add(1) // ...and the straggler enters.

			done := graceGo(func() { k.sync(g) })
			checks := g.Stats().Checks
			graceWaitUntil(t, "three more checks", func() bool {
				return g.Stats().Checks >= checks+3 || graceIsClosed(done)
			})
			if st := g.Stats(); st.GracePeriods != 1 || graceIsClosed(done) {
				t.Fatalf("returned with a straggler inside: %+v", st)
			}
			g.ReadUnlock(straggler)
			graceWaitClosed(t, "Synchronize after the straggler left", done)
		})
	}
}

// TestGraceSynchronizeNeedsNewGracePeriod checks that a caller arriving
// while a grace period is in progress waits for the next one.
func TestGraceSynchronizeNeedsNewGracePeriod(t *testing.T) {
	for _, k := range graceKinds {
		t.Run("kind="+k.name, func(t *testing.T) {
			g := NewGrace(GraceConfig{Tick: graceTestTick})
			r := g.ReadLock()
			phase := g.phase.Load()
			first := graceGo(func() { k.sync(g) })
			graceWaitUntil(t, "the first grace period flips", func() bool { return g.phase.Load() != phase })
			var gpsAtReturn atomic.Uint64
			second := graceGo(func() {
				g.Synchronize()
				gpsAtReturn.Store(g.Stats().GracePeriods)
			})
			graceWaitUntil(t, "two waiters", func() bool { return g.Stats().Waiters == 2 })
			g.ReadUnlock(r)
			graceWaitClosed(t, "the first caller", first)
			graceWaitClosed(t, "the second caller", second)
			if got := gpsAtReturn.Load(); got < 2 {
				t.Errorf("second caller returned after %d grace periods, want >= 2", got)
			}
		})
	}
}

// TestGraceExpeditedServesNormalWaiter checks that one sequence serves both
// kinds: an expedited grace period ends a normal wait long before a tick.
func TestGraceExpeditedServesNormalWaiter(t *testing.T) {
	base := runtime.NumGoroutine()
	g := NewGrace(GraceConfig{Tick: time.Hour})
	done := graceGo(g.Synchronize)
	graceWaitUntil(t, "a waiter", func() bool { return g.Stats().Waiters == 1 })
	g.SynchronizeExpedited()
	graceWaitClosed(t, "the normal waiter", done)
	if st := g.Stats(); st.GracePeriods != 1 || st.Expedited != 1 {
		t.Errorf("got %+v, want 1 grace period, expedited", st)
	}
	graceWaitIdle(t, g, base) // the ticker must not sleep for an hour
}

func TestGraceExpeditedIsNormal(t *testing.T) {
	tests := []struct {
		asNormal      bool
		wantExpedited uint64
	}{
		{false, 1},
		{true, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("normal=%v", tt.asNormal), func(t *testing.T) {
			g := NewGrace(GraceConfig{Tick: graceTestTick, ExpeditedIsNormal: tt.asNormal})
			g.SynchronizeExpedited()
			// Expedited counts grace periods begun by an expedited caller;
			// the others began on a tick.
			if st := g.Stats(); st.GracePeriods != 1 || st.Expedited != tt.wantExpedited {
				t.Errorf("got %d grace periods, %d expedited; want 1, %d", st.GracePeriods, st.Expedited, tt.wantExpedited)
			}
		})
	}
}

func TestGraceExpediteCost(t *testing.T) {
	const cost = 200 * time.Microsecond
	g := NewGrace(GraceConfig{ExpediteCost: cost})
	g.SynchronizeExpedited()
	if st := g.Stats(); st.LatencyMax < cost {
		t.Errorf("got latency %v, want >= ExpediteCost %v", st.LatencyMax, cost)
	}
}

// TestGraceSharesGracePeriods checks that concurrent normal callers share
// grace periods. A reader holds the first grace period open until every
// caller waits, so how fast the callers arrive does not matter: those that
// came before it began share it, the others share the next, two in all.
func TestGraceSharesGracePeriods(t *testing.T) {
	const callers = 200
	g := NewGrace(GraceConfig{Tick: graceTestTick})
	r := g.ReadLock()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(g.Synchronize)
	}
	graceWaitUntil(t, fmt.Sprintf("%d waiters", callers), func() bool { return g.Stats().Waiters == callers })
	g.ReadUnlock(r)
	wg.Wait()
	st := g.Stats()
	if st.Waits != callers || st.GracePeriods == 0 || st.GracePeriods > 2 {
		t.Errorf("got %d waits sharing %d grace periods, want %d sharing 1..2", st.Waits, st.GracePeriods, callers)
	}
	if st.LatencyMax <= 0 || st.LatencyTotal < st.LatencyMax {
		t.Errorf("got latency total %v max %v, want 0 < max <= total", st.LatencyTotal, st.LatencyMax)
	}
}

// TestGraceCallAfterGracePeriod checks that callbacks wait for a reader that
// entered before Call, then run in queue order.
func TestGraceCallAfterGracePeriod(t *testing.T) {
	const n = 5
	g := NewGrace(GraceConfig{Tick: graceTestTick})
	r := g.ReadLock()
	ran := make(chan int, n)
	for i := range n {
		g.Call(func() { ran <- i })
	}
	checks := g.Stats().Checks
	graceWaitUntil(t, "three more checks", func() bool {
		return g.Stats().Checks >= checks+3 || len(ran) > 0
	})
	if st := g.Stats(); len(ran) != 0 || st.CallbacksRun != 0 || st.Pending != n {
		t.Fatalf("callbacks ran inside a reader that predates them: %d ran, %+v", len(ran), st)
	}
	g.ReadUnlock(r)
	g.Barrier()
	for want := range n {
		if got := <-ran; got != want {
			t.Errorf("callback %d ran in place %d", got, want)
		}
	}
	if st := g.Stats(); st.CallbacksQueued != n || st.CallbacksRun != n || st.Pending != 0 {
		t.Errorf("got %+v, want %d queued and run, 0 pending", st, n)
	}
}

// TestGraceBarrier checks that Barrier waits for every callback its
// goroutine queued, with several goroutines queueing at once.
func TestGraceBarrier(t *testing.T) {
	const goroutines, calls = 8, 50
	g := NewGrace(GraceConfig{Tick: graceTestTick})
	g.Barrier() // nothing queued: returns at once
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			var ran atomic.Int64
			for i := range calls {
				g.Call(func() {
					if ran.Add(1) != int64(i+1) {
						t.Errorf("callback %d ran out of order", i)
					}
				})
			}
			g.Barrier()
			if got := ran.Load(); got != calls {
				t.Errorf("Barrier returned after %d of %d callbacks", got, calls)
			}
		})
	}
	wg.Wait()
	if st := g.Stats(); st.CallbacksRun != goroutines*calls {
		t.Errorf("got %d callbacks run, want %d", st.CallbacksRun, goroutines*calls)
	}
}

// TestGraceCallbackMaySynchronize checks that a callback may wait for a
// grace period and queue another callback.
func TestGraceCallbackMaySynchronize(t *testing.T) {
	g := NewGrace(GraceConfig{Tick: graceTestTick})
	var inner atomic.Bool
	g.Call(func() {
		g.Synchronize()
		g.Call(func() { inner.Store(true) })
	})
	g.Barrier()
	g.Barrier()
	if !inner.Load() {
		t.Error("callback queued by a callback did not run")
	}
}

// graceBusyReaders runs GOMAXPROCS goroutines entering and leaving
// critical sections in a tight loop until the returned stop is called.
func graceBusyReaders(g *Grace) (stop func()) {
	var quit atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !quit.Load() {
				g.ReadUnlock(g.ReadLock())
			}
		})
	}
	return func() {
		quit.Store(true)
		wg.Wait()
	}
}

func TestGraceNoStarvation(t *testing.T) {
	g := NewGrace(GraceConfig{Tick: graceTestTick})
	stop := graceBusyReaders(g)
	defer stop()
	var ran atomic.Bool
	done := graceGo(func() {
		g.Synchronize()
		g.SynchronizeExpedited()
		g.Call(func() { ran.Store(true) })
		g.Barrier()
	})
	graceWaitClosed(t, "writers among busy readers", done)
	if !ran.Load() {
		t.Error("Barrier returned before the callback ran")
	}
}

func TestGraceNoGoroutineLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	g := NewGrace(GraceConfig{Tick: graceTestTick})
	g.Synchronize()
	g.SynchronizeExpedited()
	g.Call(func() {})
	g.Barrier()
	graceWaitIdle(t, g, base)

	// The engine restarts its goroutines on demand after going idle.
	g.Call(func() {})
	g.Synchronize()
	g.Barrier()
	graceWaitIdle(t, g, base)
}

// graceObject is published to torture readers and retired by writers.
type graceObject struct{ retired atomic.Bool }

// graceTortureReaders runs GOMAXPROCS+1 readers that load cur inside a
// critical section, sometimes yield inside it, and count the retired objects
// they see, until the returned stop is called; stop returns that count.
func graceTortureReaders(g *Grace, cur *atomic.Pointer[graceObject]) (stop func() int64) {
	var bad atomic.Int64
	var quit atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 1 {
		wg.Go(func() {
			for i := 0; !quit.Load(); i++ {
				r := g.ReadLock()
				p := cur.Load()
				if i%8 == 0 {
					runtime.Gosched()
				}
				if p.retired.Load() {
					bad.Add(1)
				}
				g.ReadUnlock(r)
			}
		})
	}
	return func() int64 {
		quit.Store(true)
		wg.Wait()
		return bad.Load()
	}
}

// TestGraceTorture retires published objects through every writer path
// while busy readers check that nothing they hold has been retired.
func TestGraceTorture(t *testing.T) {
	g := NewGrace(GraceConfig{Tick: 100 * time.Microsecond})
	var cur atomic.Pointer[graceObject]
	cur.Store(new(graceObject))
	stop := graceTortureReaders(g, &cur)
	for i := range 60 {
		old := cur.Swap(new(graceObject))
		switch i % 3 {
		case 0:
			g.Synchronize()
			old.retired.Store(true)
		case 1:
			g.SynchronizeExpedited()
			old.retired.Store(true)
		default:
			g.Call(func() { old.retired.Store(true) })
		}
	}
	g.Barrier()
	if n := stop(); n != 0 {
		t.Errorf("readers saw %d retired objects", n)
	}
}
