package locking

import (
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernfsim/kernfsim/internal/pshard"
)

const (
	// defaultTick is the default interval of normal grace-period work: a
	// kernel tick at HZ=250.
	defaultTick = 4 * time.Millisecond

	// maxGraceShards caps GraceConfig.Shards; more shards only slow scans.
	maxGraceShards = 1 << 12

	// maxSpare caps the callback storage an idle engine keeps for reuse.
	maxSpare = 1 << 16

	// expediteSpin is how long an expedited grace period polls readers with
	// runtime.Gosched before it sleeps between polls.
	expediteSpin = 100 * time.Microsecond

	// expediteNap is the sleep between polls after expediteSpin. Go rounds
	// sub-millisecond sleeps up towards a millisecond on Linux.
	expediteNap = 50 * time.Microsecond
)

// ReadToken identifies a read-side critical section; pass it back to
// ReadUnlock. It encodes the reader counter the section entered on. A
// Strategy's RLock returns one too: its low bits are the strategy's own
// (Grace's counter index under rcu) and, when the hold is timed, the rest
// carry the time it began (holdtime.go). It is 64 bits wide for that.
type ReadToken uint64

// GraceConfig configures a Grace. The zero value is the default engine.
type GraceConfig struct {
	Tick              time.Duration // normal grace periods begin on a tick; default 4ms (HZ=250)
	ExpediteCost      time.Duration // optional fixed extra cost of each expedited grace period; default 0
	ExpeditedIsNormal bool          // model rcu_normal=1 / PREEMPT_RT: expedited requests behave as normal ones
	Shards            int           // reader shards; 0 = defaultShards(); rounded up to a power of two
}

// GraceStats are a Grace's counters since it was created.
type GraceStats struct {
	GracePeriods, Expedited       uint64        // completed (Expedited is a subset: begun by SynchronizeExpedited)
	LatencyTotal, LatencyMax      time.Duration // of Synchronize/SynchronizeExpedited callers, arrival to return
	CallbacksQueued, CallbacksRun uint64        // by Call (Barrier's markers are not counted)

	Waits   uint64 // Synchronize/SynchronizeExpedited calls returned; LatencyTotal/Waits is the mean latency
	Waiters int    // callers in Synchronize/SynchronizeExpedited now
	Pending uint64 // callbacks queued and not yet run: the deferred queue length
	Checks  uint64 // quiescence checks (scans of one reader index) made by grace periods
}

// gpStep is where the grace period in progress stands.
type gpStep uint8

const (
	gpIdle          gpStep = iota // no grace period in progress
	gpDrainInactive               // begun: waiting for stragglers on the inactive index
	gpDrainOld                    // flipped: waiting for readers of the previous index
)

// graceCallback is a queued Call, or a Barrier marker (f == nil).
type graceCallback struct {
	f    func()
	done chan struct{} // Barrier marker: closed when the worker reaches it
}

// graceBatch is the callbacks queued while one grace period was the next to
// complete; they may run once seq reaches snap.
type graceBatch struct {
	snap uint64
	cbs  []graceCallback
}

// Grace is an SRCU-like grace-period engine: the rcu strategy's readers
// enter and leave read-side critical sections, and writers wait, or queue a
// callback, until every section that began before them has ended.
//
// Readers increment a counter chosen by (index, shard): the index is the
// low bit of phase, the shard is the calling P's own (pshard.Of), and each
// counter has its own cache line. A reader leaves on the counter it
// entered, so every counter is non-negative and "every shard of an index
// reads zero" means every section that entered that index before the scan
// has ended. A grace period (1) waits for the inactive index to drain
// (stragglers that read phase before the previous flip), (2) flips phase,
// (3) waits for the previous index to drain. New readers go to the new
// index, so they cannot starve it.
//
// Normal grace periods begin and are checked on ticks (multiples of Tick
// from NewGrace) by a ticker goroutine; every caller that arrives before one
// begins shares it. Expedited ones are driven by their caller at once. A
// sequence number (seq, as the kernel's rcu_seq) makes each caller wait for
// a grace period that began after it arrived. Callbacks run in queue order
// on a worker goroutine. Both goroutines start on demand and exit when
// nothing waits, so an idle engine owns no goroutine and needs no Close.
//
// Reader cost: one atomic load of phase, the P's number (pshard.Of) and
// one atomic add on a cache line that only the P's readers write (see
// pshard.Of for when two Ps share one), on entry and one add on exit; no
// lock, no allocation.
// Writer cost: Synchronize blocks one to three ticks (4-12 ms by default)
// when readers leave promptly; SynchronizeExpedited a few microseconds
// without readers, plus ExpediteCost; Call takes one short mutex and never
// waits. Scans cost two cache lines per shard.
// Allocation: none on the read side; a channel per grace period that someone
// waits on, a Barrier's marker, and amortised queue growth in Call.
// Staleness: a reader sees whatever was published when it loaded it; a
// writer's teardown runs only after every reader that could hold the old
// version has left.
//
// Lock ordering: gpMu, then mu (the package's tree, in strategy.go).
// mu is never held while blocking; gpMu is held by an expedited caller
// while it polls the readers, and by the ticker for one check. Neither is
// held while a callback runs.
// Synchronize, SynchronizeExpedited and Barrier must not be called inside a
// read-side critical section (they would wait for it); Barrier must not be
// called from a callback (it would wait for itself).
type Grace struct {
	// Read side, read-mostly, on its own cache line.
	phase atomic.Uint32   // accessed atomically; low bit = index new readers enter; written under gpMu
	mask  uint32          // immutable: shards per index minus one
	ctr   []paddedCounter // immutable slice; elements accessed atomically; counter of (shard s, index i) is ctr[s<<1|i]
	_     [cacheLine - 32]byte

	tick     time.Duration // immutable
	cost     time.Duration // immutable: ExpediteCost
	asNormal bool          // immutable: ExpeditedIsNormal
	start    time.Time     // immutable: origin of the tick grid
	kick     chan struct{} // immutable; buffered(1): wakes the ticker when nothing waits any more
	checks   atomic.Uint64 // accessed atomically
	cbRun    atomic.Uint64 // accessed atomically

	gpMu      sync.Mutex
	step      gpStep // protected by gpMu
	expedited bool   // protected by gpMu: the grace period in progress was begun by an expedited caller

	mu       sync.Mutex
	seq      uint64          // protected by mu, written with gpMu held too: 2*completed, +1 while one is in progress
	need     uint64          // protected by mu: highest seq a normal waiter or callback needs
	done     chan struct{}   // protected by mu: closed when the grace period in progress ends; nil if nobody waits
	ticking  bool            // protected by mu: a ticker goroutine is running
	working  bool            // protected by mu: a callback worker goroutine is running
	queue    []graceBatch    // protected by mu: queued callbacks, oldest batch first
	spare    []graceCallback // protected by mu: storage of a run batch, for reuse
	cbQueued uint64          // protected by mu
	gps      uint64          // protected by mu
	expGPs   uint64          // protected by mu
	waits    uint64          // protected by mu
	waiters  int             // protected by mu
	latTotal time.Duration   // protected by mu
	latMax   time.Duration   // protected by mu
}

// NewGrace returns an idle engine configured by cfg; zero fields take their
// defaults and Shards is rounded up to a power of two (at most 4096).
func NewGrace(cfg GraceConfig) *Grace {
	if cfg.Tick <= 0 {
		cfg.Tick = defaultTick
	}
	n := cfg.Shards
	if n <= 0 {
		n = defaultShards()
	}
	n = 1 << bits.Len(uint(min(n, maxGraceShards)-1))
	return &Grace{
		mask:     uint32(n - 1),
		ctr:      make([]paddedCounter, 2*n),
		tick:     cfg.Tick,
		cost:     max(cfg.ExpediteCost, 0),
		asNormal: cfg.ExpeditedIsNormal,
		start:    time.Now(),
		kick:     make(chan struct{}, 1),
	}
}

// ReadLock enters a read-side critical section. It takes no lock, writes
// one padded counter and does not allocate; sections may nest.
//
// The shard is the P's number (pshard.Of). A home shard kept per P in a
// sync.Pool would cost a Get and a Put per section and could give two Ps
// one shard once a garbage collection empties the pool. A random shard
// per call would make two CPUs write one line on about half their
// sections. See BenchmarkGraceRead and
// docs/notes/2026-12-01-walker-scaling.md.
func (g *Grace) ReadLock() ReadToken {
	return g.ReadLockOn(pshard.P())
}

// ReadLockOn is ReadLock for a caller that already asked for its P's
// number (pshard.P), to count the section elsewhere too.
func (g *Grace) ReadLockOn(p uint32) ReadToken {
	t := pshard.Shard(p, g.mask)<<1 | g.phase.Load()&1
	g.ctr[t].n.Add(1)
	return ReadToken(t)
}

// ReadUnlock leaves the read-side critical section t came from.
func (g *Grace) ReadUnlock(t ReadToken) {
	g.ctr[t].n.Add(-1)
}

// graceSnap returns the seq value that shows a grace period that began after
// a caller who read seq has completed (the kernel's rcu_seq_snap).
func graceSnap(seq uint64) uint64 {
	return (seq + 3) &^ 1
}

// Synchronize returns after a normal grace period: every read-side critical
// section that began before the call has ended. Grace periods begin on
// ticks and are shared by every caller that arrived before they began.
func (g *Grace) Synchronize() {
	start := time.Now()
	g.mu.Lock()
	g.waiters++
	snap := graceSnap(g.seq)
	g.requestLocked(snap)
	g.waitLocked(snap)
	g.leaveLocked(start)
	g.mu.Unlock()
}

// SynchronizeExpedited is Synchronize without waiting for ticks: the caller
// begins a grace period at once (or finishes the one in progress, then
// begins its own) and polls the readers, spinning first, then sleeping.
// With ExpeditedIsNormal it is Synchronize.
func (g *Grace) SynchronizeExpedited() {
	if g.asNormal {
		g.Synchronize()
		return
	}
	start := time.Now()
	g.mu.Lock()
	g.waiters++
	snap := graceSnap(g.seq)
	g.mu.Unlock()

	g.gpMu.Lock()
	for g.seq < snap { // gpMu held: seq cannot change under us
		if g.step == gpIdle {
			g.beginLocked(true)
			graceDelay(g.cost)
		}
		g.driveLocked()
	}
	g.gpMu.Unlock()

	g.mu.Lock()
	g.leaveLocked(start)
	g.mu.Unlock()
}

// Call queues f to run, on a worker goroutine, after a normal grace period
// that begins after the call; callbacks run one at a time in queue order.
// The caller never waits. f may call Call and Synchronize, not Barrier.
func (g *Grace) Call(f func()) {
	g.mu.Lock()
	snap := graceSnap(g.seq)
	g.enqueueLocked(snap, graceCallback{f: f})
	g.cbQueued++
	g.requestLocked(snap)
	g.startWorkerLocked()
	g.mu.Unlock()
}

// Barrier returns when every callback queued by Call before it has run. It
// adds no grace period of its own: it queues a marker behind the last
// callback and waits for the worker to reach it.
func (g *Grace) Barrier() {
	g.mu.Lock()
	if g.cbQueued == g.cbRun.Load() {
		g.mu.Unlock()
		return
	}
	snap := g.seq
	if n := len(g.queue); n > 0 {
		snap = g.queue[n-1].snap
	}
	done := make(chan struct{})
	g.enqueueLocked(snap, graceCallback{done: done})
	g.startWorkerLocked()
	g.mu.Unlock()
	<-done
}

// Stats returns the engine's counters.
func (g *Grace) Stats() GraceStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	run := g.cbRun.Load()
	return GraceStats{
		GracePeriods:    g.gps,
		Expedited:       g.expGPs,
		LatencyTotal:    g.latTotal,
		LatencyMax:      g.latMax,
		CallbacksQueued: g.cbQueued,
		CallbacksRun:    run,
		Waits:           g.waits,
		Waiters:         g.waiters,
		Pending:         g.cbQueued - run,
		Checks:          g.checks.Load(),
	}
}

// requestLocked records that a normal waiter or callback needs seq to reach
// snap, and starts the ticker if it is not running.
// Preconditions: g.mu held.
func (g *Grace) requestLocked(snap uint64) {
	g.need = max(g.need, snap)
	if !g.ticking {
		g.ticking = true
		go g.tickLoop()
	}
}

// waitLocked blocks until seq reaches snap.
// Preconditions: g.mu held; it is released while blocked.
func (g *Grace) waitLocked(snap uint64) {
	for g.seq < snap {
		if g.done == nil {
			g.done = make(chan struct{})
		}
		done := g.done
		g.mu.Unlock()
		<-done
		g.mu.Lock()
	}
}

// leaveLocked accounts a Synchronize caller that arrived at start.
// Preconditions: g.mu held.
func (g *Grace) leaveLocked(start time.Time) {
	d := time.Since(start)
	g.waiters--
	g.waits++
	g.latTotal += d
	g.latMax = max(g.latMax, d)
}

// beginLocked begins a grace period.
// Preconditions: g.gpMu held; no grace period in progress.
func (g *Grace) beginLocked(expedited bool) {
	g.mu.Lock()
	g.seq++
	g.mu.Unlock()
	g.step = gpDrainInactive
	g.expedited = expedited
}

// advanceLocked makes one quiescence check of the inactive index and, if it
// has drained, moves the grace period on: flip the phase after step 1, end
// it after step 3. It reports whether it moved on.
// Preconditions: g.gpMu held; a grace period in progress.
func (g *Grace) advanceLocked() bool {
	if !g.drained(g.phase.Load()&1 ^ 1) {
		return false
	}
	if g.step == gpDrainInactive {
		g.phase.Add(1)
		g.step = gpDrainOld
		return true
	}
	g.endLocked()
	return true
}

// drained reports whether every shard of reader index idx read zero.
func (g *Grace) drained(idx uint32) bool {
	g.checks.Add(1)
	for i := idx; i < uint32(len(g.ctr)); i += 2 {
		if g.ctr[i].n.Load() != 0 {
			return false
		}
	}
	return true
}

// endLocked ends the grace period in progress and wakes its waiters; if no
// normal waiter or callback needs another, it wakes the ticker to exit.
// Preconditions: g.gpMu held.
func (g *Grace) endLocked() {
	g.step = gpIdle
	g.mu.Lock()
	g.seq++
	g.gps++
	if g.expedited {
		g.expGPs++
	}
	if g.done != nil {
		close(g.done)
		g.done = nil
	}
	idle := g.ticking && g.need <= g.seq
	g.mu.Unlock()
	if idle {
		select {
		case g.kick <- struct{}{}:
		default:
		}
	}
}

// driveLocked polls the readers until the grace period in progress ends,
// with runtime.Gosched for expediteSpin, then with short sleeps.
// Preconditions: g.gpMu held.
func (g *Grace) driveLocked() {
	start := time.Now()
	for g.step != gpIdle {
		if g.advanceLocked() {
			continue
		}
		if time.Since(start) < expediteSpin {
			runtime.Gosched()
		} else {
			time.Sleep(expediteNap)
		}
	}
}

// tickLoop is the ticker goroutine: it wakes on each tick of the grid and
// exits when no normal waiter or callback needs a grace period.
func (g *Grace) tickLoop() {
	t := time.NewTimer(g.untilTick())
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if !g.onTick() {
				return
			}
		case <-g.kick:
			if !g.wanted() {
				return
			}
		}
		t.Reset(g.untilTick())
	}
}

// untilTick returns the time left until the next tick of the grid.
func (g *Grace) untilTick() time.Duration {
	return g.tick - time.Since(g.start)%g.tick
}

// onTick makes the tick's quiescence check of the grace period in progress
// and, if none is in progress and one is needed, begins one. It reports
// false, having marked the ticker stopped, if nothing needs a grace period.
func (g *Grace) onTick() bool {
	g.gpMu.Lock()
	defer g.gpMu.Unlock()
	if g.step != gpIdle {
		g.advanceLocked()
		if g.step != gpIdle {
			return true
		}
	}
	if !g.wantedLocked() {
		return false
	}
	g.beginLocked(false)
	g.advanceLocked()
	return true
}

// wanted reports whether a grace period is in progress or needed; if not,
// it marks the ticker stopped and the calling ticker must exit.
func (g *Grace) wanted() bool {
	g.gpMu.Lock()
	defer g.gpMu.Unlock()
	return g.step != gpIdle || g.wantedLocked()
}

// wantedLocked reports whether a normal waiter or callback needs a grace
// period that has not begun; if not, it marks the ticker stopped.
// Preconditions: g.gpMu held; no grace period in progress.
func (g *Grace) wantedLocked() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.need > g.seq {
		return true
	}
	g.ticking = false
	return false
}

// startWorkerLocked starts the callback worker if it is not running.
// Preconditions: g.mu held.
func (g *Grace) startWorkerLocked() {
	if !g.working {
		g.working = true
		go g.work()
	}
}

// enqueueLocked queues cb to run once seq reaches snap, which is no less
// than that of any queued callback.
// Preconditions: g.mu held.
func (g *Grace) enqueueLocked(snap uint64, cb graceCallback) {
	n := len(g.queue)
	if n == 0 || g.queue[n-1].snap != snap {
		g.queue = append(g.queue, graceBatch{snap: snap, cbs: g.spare})
		g.spare = nil
		n++
	}
	g.queue[n-1].cbs = append(g.queue[n-1].cbs, cb)
}

// work is the callback worker: it waits for the grace period the oldest
// batch needs, runs it, and exits when the queue is empty.
func (g *Grace) work() {
	g.mu.Lock()
	for len(g.queue) > 0 {
		b := g.queue[0]
		if g.seq < b.snap {
			g.waitLocked(b.snap)
			continue
		}
		g.queue = slices.Delete(g.queue, 0, 1)
		g.mu.Unlock()
		g.run(b.cbs)
		g.mu.Lock()
		if cap(b.cbs) <= maxSpare {
			g.spare = b.cbs[:0]
		}
	}
	g.working = false
	g.mu.Unlock()
}

// run runs a batch of callbacks in order, then drops its references.
func (g *Grace) run(batch []graceCallback) {
	for _, cb := range batch {
		if cb.f == nil {
			close(cb.done)
			continue
		}
		cb.f()
		g.cbRun.Add(1)
	}
	clear(batch)
}

// graceDelay spends d: sleeping if it is a millisecond or more, else
// yielding until it has passed (Go sleeps round up towards a millisecond).
func graceDelay(d time.Duration) {
	if d <= 0 {
		return
	}
	if d >= time.Millisecond {
		time.Sleep(d)
		return
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		runtime.Gosched()
	}
}
