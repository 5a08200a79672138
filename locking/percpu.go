package locking

import (
	"sync"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/internal/pshard"
)

// PercpuRWSem is Linux's percpu_rw_semaphore (kernel/locking/percpu-rwsem.c
// with its rcu_sync, kernel/rcu/sync.c), which serves cgroups
// (cgroup_threadgroup_rwsem), filesystem freezing (sb_writers) and
// uprobes (dup_mmap_sem) but has never served kernfs. A reader adds one to
// its own CPU's counter (here its P's, pshard.Of) and, while rcu_sync
// says readers may be fast, touches nothing else; a writer first switches
// readers to the slow path (rcu_sync_enter: one grace period), then
// blocks new readers (sem->block) and waits until the per-CPU counters
// sum to zero. On unlock readers stay on the slow path until a grace
// period after the last writer left (rcu_sync_exit queues that, so a
// writer that comes within it waits for no grace period: a burst of
// writers pays one). The slow path adds the counter too, then checks
// sem->block; one that finds a writer takes its add back, wakes the
// writer, and waits for it.
//
// percpu-dyn is the same lock with readers on the slow path for good, as
// cgroup_threadgroup_rwsem is under cgroup's favordynmods
// (rcu_sync_enter_start at boot): writers then wait for no grace period,
// and the strategy has no Grace.
//
// In Go every atomic is sequentially consistent, so the fast path needs
// no RCU-sched read section, and the fast and slow paths cost the same;
// the writer still waits the grace period rcu_sync_enter waits. Readers
// that find a writer wait on a gate that lets every waiting reader in
// before the next writer. How this differs from the kernel's, and why:
// docs/designs/percpu.md.
//
// Counting: a reader's acquisition is counted on its P's line (the fast
// path in Stats.ReadFast), one that waits for a writer on the lock's. The
// write side's acquisition is counted once rcu_sync is through: it is
// contended if another writer held the lock or readers had to drain; the
// rcu_sync grace period shows in Stats.Grace (Waits, LatencyTotal), not in
// WriteWait, as lock_stat does not see it either.
//
// Reader cost: one atomic add on the P's own counter line and a load of a
// line only writers write, to enter and to leave (with counters on, an
// add on a second line of the P's, as rwsem's). Writer cost: a grace
// period (1-3 ticks, or an expedited one) unless a writer left less than
// a grace period before, or none under percpu-dyn; then exclusive, and a
// scan of every P's counter until readers drain; a grace-period callback
// queued on unlock. Allocation: none per reader; the writer's grace
// period allocates as Synchronize does, and the exit callback's queue
// grows amortised. Staleness: none.
type PercpuRWSem struct {
	// Read by every reader, written by writers only: a line of its own.
	state   atomic.Int32   // accessed atomically: rcu_sync's gp_state (rss*); written with rssMu held
	block   atomic.Bool    // accessed atomically: a writer holds or is taking the lock (sem->block); written with gate held
	waiting atomic.Bool    // accessed atomically: a writer waits for readers to drain (sem->writer); written with gate held
	count   bool           // immutable: counters on
	hold    holdSampler    // immutable
	readers *percpuReaders // immutable pointer: sem->read_count
	reads   *readShards    // immutable pointer (newReadShards): read acquisitions on the P's line, and timed holds
	_       [cacheLine - 24]byte

	gate  sync.RWMutex // writers hold it while they hold the lock; readers that find block set wait on its read side
	stats lockStats    // write side (writeStart protected by gate), and readers that waited for a writer
	_     [cacheLine]byte

	wake     chan struct{} // immutable; buffered(1): a reader prods a writer waiting for readers to drain
	grace    *Grace        // immutable pointer; nil under percpu-dyn
	expedite bool          // immutable: Options.ExpediteSync
	exitFn   func()        // immutable: p.syncCallback, made once so rcu_sync_exit allocates no closure
	name     string        // immutable

	rssMu   sync.Mutex    // rcu_sync's rss_lock
	gpCount int           // protected by rssMu: writers between rcu_sync_enter and rcu_sync_exit (gp_count)
	passed  chan struct{} // protected by rssMu: closed when state leaves rssEnter; nil otherwise
}

// rcu_sync's states, in the kernel's order: readers may take the fast
// path only in rssIdle.
const (
	rssIdle   int32 = iota // GP_IDLE: readers_fast
	rssEnter               // GP_ENTER: a writer waits for a grace period
	rssPassed              // GP_PASSED: every reader is on the slow path
	rssExit                // GP_EXIT: the last writer left; the callback is queued
	rssReplay              // GP_REPLAY: a writer came and left again during rssExit
)

// percpuReaders are the per-P reader counts (sem->read_count), one line
// each. A reader may leave on another P than it entered on, so one shard
// may go negative; only the sum means anything.
type percpuReaders [numReadShards]paddedCounter

func newPercpu(o Options, dyn bool) *PercpuRWSem {
	p := &PercpuRWSem{count: !o.NoStats, hold: holdSamplerOf(o.HoldSampleEvery), readers: new(percpuReaders),
		reads: newReadShards(), wake: make(chan struct{}, 1), expedite: o.ExpediteSync, name: "percpu"}
	p.stats.init(o)
	p.exitFn = p.syncCallback
	if dyn {
		p.name = "percpu-dyn"
		p.state.Store(rssPassed) // rcu_sync_enter_start: readers slow for good
		p.gpCount = 1
	} else {
		p.grace = NewGrace(o.Grace)
	}
	return p
}

func (p *PercpuRWSem) Name() string   { return p.name }
func (p *PercpuRWSem) Seal()          {}
func (p *PercpuRWSem) Grace() *Grace  { return p.grace }
func (p *PercpuRWSem) Traits() Traits { return mustTraits(p.name) }

// Stats adds the per-P read counters, and the grace-period engine's, to
// the lock's.
func (p *PercpuRWSem) Stats() Stats {
	s := p.stats.snapshot()
	if s.CountersSwitchedOn {
		p.reads.addTo(&s)
	}
	if p.grace != nil {
		s.Grace = p.grace.Stats()
	}
	return s
}

// RLock is percpu_down_read: add to the P's counter; keep it if readers
// are fast or no writer blocks them; else take it back and wait for the
// writer.
func (p *PercpuRWSem) RLock() ReadToken {
	c := &p.readers[pshard.Of(numReadShards-1)].n
	c.Add(1)
	if p.state.Load() == rssIdle {
		return p.counted(true)
	}
	if !p.block.Load() {
		return p.counted(false)
	}
	c.Add(-1)
	p.prodWriter()
	if !p.count {
		p.waitRead()
		return 0
	}
	return p.stats.readLock(never, p.waitRead)
}

// counted counts a reader that got in without waiting.
func (p *PercpuRWSem) counted(fast bool) ReadToken {
	switch {
	case !p.count:
		return 0
	case fast:
		return p.reads.enterFast(p.hold, 0)
	}
	return p.reads.enter(p.hold, 0)
}

// never is the try of an acquisition already known to wait.
func never() bool { return false }

// waitRead waits for the writer in the way, then adds to the P's
// counter: holding the gate's read side, no writer holds the lock, and
// the next one will see the add.
func (p *PercpuRWSem) waitRead() {
	p.gate.RLock()
	p.readers[pshard.Of(numReadShards-1)].n.Add(1)
	p.gate.RUnlock()
}

// prodWriter wakes a writer waiting for readers to drain (rcuwait_wake_up).
func (p *PercpuRWSem) prodWriter() {
	if !p.waiting.Load() {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// RUnlock is percpu_up_read: take the add back on the P's counter, and
// wake a writer waiting for readers to drain.
func (p *PercpuRWSem) RUnlock(t ReadToken) {
	var end int64
	if t.timed() {
		end = clock()
	}
	p.readers[pshard.Of(numReadShards-1)].n.Add(-1)
	p.prodWriter()
	if t.timed() {
		p.reads.left(p.hold, t, end)
	}
}

// Lock is percpu_down_write: switch readers to the slow path, exclude
// other writers, block new readers, wait for the readers in to leave.
func (p *PercpuRWSem) Lock() error {
	p.syncEnter()
	held := false
	p.stats.writeLock(func() bool {
		if held = p.gate.TryLock(); !held {
			return false
		}
		p.block.Store(true)
		return p.drained()
	}, func() {
		if !held {
			p.gate.Lock()
			p.block.Store(true)
		}
		p.waitReaders()
	})
	return nil
}

// Unlock is percpu_up_write: let readers in (on the slow path), then
// queue their return to the fast path.
func (p *PercpuRWSem) Unlock() {
	p.stats.writeUnlock(p.release)
	p.syncExit()
}

// release clears sem->block and wakes the readers waiting at the gate.
// Preconditions: the write side held.
func (p *PercpuRWSem) release() {
	p.block.Store(false)
	p.gate.Unlock()
}

// drained reports whether the per-P counters sum to zero
// (readers_active_check).
func (p *PercpuRWSem) drained() bool {
	var sum int64
	for i := range p.readers {
		sum += p.readers[i].n.Load()
	}
	return sum == 0
}

// waitReaders waits until the readers in have left, woken by each.
// Preconditions: the gate held, block set.
func (p *PercpuRWSem) waitReaders() {
	p.waiting.Store(true)
	for !p.drained() {
		<-p.wake
	}
	p.waiting.Store(false)
}

// syncEnter is rcu_sync_enter: the first writer from rssIdle waits a
// grace period, so every reader that saw rssIdle has added to its counter
// (here: so that the writer pays for it; see the type's doc), writers
// behind it wait for that one, and writers that find readers already
// slow (rssPassed, rssExit, rssReplay) go on.
func (p *PercpuRWSem) syncEnter() {
	p.rssMu.Lock()
	p.gpCount++
	if p.state.Load() == rssIdle {
		p.state.Store(rssEnter)
		p.passed = make(chan struct{})
		p.rssMu.Unlock()
		if p.expedite {
			p.grace.SynchronizeExpedited()
		} else {
			p.grace.Synchronize()
		}
		p.rssMu.Lock()
		p.state.Store(rssPassed)
		close(p.passed)
		p.passed = nil
	}
	for p.state.Load() == rssEnter {
		passed := p.passed
		p.rssMu.Unlock()
		<-passed
		p.rssMu.Lock()
	}
	p.rssMu.Unlock()
}

// syncExit is rcu_sync_exit: the last writer out queues readers' return
// to the fast path a grace period hence, or, if one is queued already,
// asks it to wait one more.
func (p *PercpuRWSem) syncExit() {
	p.rssMu.Lock()
	if p.gpCount--; p.gpCount == 0 {
		switch p.state.Load() {
		case rssPassed:
			p.state.Store(rssExit)
			p.grace.Call(p.exitFn)
		case rssExit:
			p.state.Store(rssReplay)
		}
	}
	p.rssMu.Unlock()
}

// syncCallback is rcu_sync_func, run a grace period after it was queued:
// a writer is in again (readers stay slow), one came and went (wait one
// more), or readers may be fast again.
func (p *PercpuRWSem) syncCallback() {
	p.rssMu.Lock()
	switch {
	case p.gpCount > 0:
		p.state.Store(rssPassed)
	case p.state.Load() == rssReplay:
		p.state.Store(rssExit)
		p.grace.Call(p.exitFn)
	default:
		p.state.Store(rssIdle)
	}
	p.rssMu.Unlock()
}
