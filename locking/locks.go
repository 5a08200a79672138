package locking

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernfsim/kernfsim/internal/pshard"
)

// lockStats counts acquisitions of one lock. It sits right after the lock
// word in the lock's struct, so the uncontended path adds one atomic add on
// a cache line the acquirer has just written anyway (BenchmarkLock;
// docs/notes/2026-12-01-sim-rwsem.md). The contended path also reads the clock
// twice. A contended acquisition is counted as soon as the acquirer finds
// the lock held, before it waits; wait time is added when it gets the lock.
//
// One acquisition in hold.every() is timed (holdtime.go): the add's result
// picks it, the clock is read when the lock is got (the contended path's
// second reading) and again at release, and the hold, scaled up, is added
// after the lock is released.
type lockStats struct {
	read, write lockSide
	// writeStart is when the write side's timed hold began, 0 if the
	// current hold is not timed. Protected by the lock's write side: set
	// by writeLock with it held, cleared by writeUnlock before it unlocks.
	writeStart int64
	off        bool        // immutable: counters switched off
	hold       holdSampler // immutable
}

// lockSide is one side's counters.
type lockSide struct {
	acq, cont      atomic.Int64 // accessed atomically
	waitNs, heldNs atomic.Int64 // accessed atomically; heldNs is an estimate
}

// init sets the counters up as o asks.
func (s *lockStats) init(o Options) {
	s.off = o.NoStats
	s.hold = holdSamplerOf(o.HoldSampleEvery)
}

// acquire takes a lock through try and wait, counting it on side, and
// returns the clock reading its hold starts at if it is timed, else 0.
func (s *lockStats) acquire(side *lockSide, try func() bool, wait func()) int64 {
	if s.off {
		wait()
		return 0
	}
	var got int64
	if !try() {
		side.cont.Add(1)
		start := clock()
		wait()
		got = clock()
		side.waitNs.Add(got - start)
	}
	if !s.hold.take(side.acq.Add(1)) {
		return 0
	}
	if got == 0 {
		got = clock()
	}
	return got
}

// readLock takes a read lock through try and wait, counting it, and
// returns its token (timed if the hold is).
func (s *lockStats) readLock(try func() bool, wait func()) ReadToken {
	if start := s.acquire(&s.read, try, wait); start != 0 {
		return timedToken(0, start)
	}
	return 0
}

// readUnlock releases a read lock taken by readLock with token t through
// unlock, adding its hold if it is timed.
func (s *lockStats) readUnlock(t ReadToken, unlock func()) {
	if !t.timed() {
		unlock()
		return
	}
	end := clock()
	unlock()
	s.read.heldNs.Add(s.hold.scale(t.heldUntil(end)))
}

// writeLock takes the write side through try and wait, counting it, and
// starts timing its hold if it is sampled.
func (s *lockStats) writeLock(try func() bool, wait func()) {
	s.writeStart = s.acquire(&s.write, try, wait)
}

// writeUnlock releases the write side through unlock, adding its hold if
// it is timed.
// Preconditions: the write side held (taken by writeLock); it is released.
func (s *lockStats) writeUnlock(unlock func()) {
	start := s.writeStart
	if start == 0 {
		unlock()
		return
	}
	s.writeStart = 0
	end := clock()
	unlock()
	s.write.heldNs.Add(s.hold.scale(end - start))
}

func (s *lockStats) snapshot() Stats {
	if s.off {
		return Stats{}
	}
	return Stats{
		LockCounts: LockCounts{
			ReadAcquisitions:  s.read.acq.Load(),
			ReadContended:     s.read.cont.Load(),
			ReadWait:          time.Duration(s.read.waitNs.Load()),
			ReadHeld:          time.Duration(s.read.heldNs.Load()),
			WriteAcquisitions: s.write.acq.Load(),
			WriteContended:    s.write.cont.Load(),
			WriteWait:         time.Duration(s.write.waitNs.Load()),
			WriteHeld:         time.Duration(s.write.heldNs.Load()),
		},
		HoldSampleEvery:    s.hold.every(),
		ReadSideCounted:    true,
		CountersSwitchedOn: true,
	}
}

// Mutex is one global mutex for readers and writers, like kernfs_mutex up
// to Linux 5.14.
//
// Reader cost: one mutex acquisition; readers serialise with each other.
// Writer cost: the same mutex. Allocation: none. Staleness: none, readers
// see every completed write.
type Mutex struct {
	mu    sync.Mutex
	stats lockStats // right after the lock word: see lockStats; writeStart protected by mu
}

func (m *Mutex) Name() string        { return "mutex" }
func (m *Mutex) RLock() ReadToken    { return m.stats.readLock(m.mu.TryLock, m.mu.Lock) }
func (m *Mutex) RUnlock(t ReadToken) { m.stats.readUnlock(t, m.mu.Unlock) }
func (m *Mutex) Lock() error         { m.stats.writeLock(m.mu.TryLock, m.mu.Lock); return nil }
func (m *Mutex) Unlock()             { m.stats.writeUnlock(m.mu.Unlock) }
func (m *Mutex) Seal()               {}
func (m *Mutex) Grace() *Grace       { return nil }
func (m *Mutex) Traits() Traits      { return mustTraits("mutex") }
func (m *Mutex) Stats() Stats        { return m.stats.snapshot() }

// RWSem is a reader-writer lock with writer preference (a waiting writer
// blocks new readers), like kernfs_rwsem from Linux 5.15 and Go's
// sync.RWMutex, which it is. Go's RWMutex keeps the kernel rwsem's rules
// that these benchmarks meet: a reader's fast path is one atomic add on
// the shared count (down_read's), a pending writer turns the count
// negative so new readers queue behind it, a writer's unlock releases
// every reader that queued in one batch, and readers never spin (Linux
// dropped reader optimistic spinning in 5.11, commit 617f3ef9). It differs
// in one: a writer waiting for readers to leave sleeps, where the kernel's
// spins a while first; that shows only with writers (churn).
//
// The counters must not add to that cache-line traffic: with no writer
// about, RLock is RWMutex.RLock itself, and the acquisition is counted on
// the calling P's own line (pshard.Of), not on the lock's. TryRLock
// first, as the other locks are counted, would add a compare-and-swap
// that fails whenever another CPU moved the count in between, and an add
// on the lock's line would pull the line once more per acquisition
// (docs/notes/2026-12-01-sim-rwsem.md). A reader that a
// writer overtakes between the writer check and RLock is counted as
// uncontended; its wait still shows in its operation's latency. A timed
// reader's start travels in its token and its hold is added to the P's
// line it leaves on (holdtime.go), whichever path it came in by.
//
// Reader cost: one atomic add on the lock's shared reader count to enter
// and one to leave, so readers on different CPUs bounce one cache line, as
// kernfs readers do; with counters on, an add on the P's own line
// (pshard.Of), and on one acquisition in HoldSampleEvery two clock reads
// and a second add there. Writer cost: exclusive, waits for readers to
// drain. Allocation: none. Staleness: none.
type RWSem struct {
	mu    sync.RWMutex
	stats lockStats // writer counters (writeStart protected by mu), and readers' acquisitions when a writer is about
	_     [cacheLine]byte
	// writers is how many writers are in Lock or hold the lock: read by
	// every reader, written only by writers, so off the lock's line.
	writers atomic.Int32 // accessed atomically
	count   bool         // immutable: counters on (a copy of !stats.off off the lock's line)
	hold    holdSampler  // immutable: a copy of stats.hold off the lock's line
	_       [cacheLine - 8]byte
	reads   *readShards // immutable pointer (newReadShards); read acquisitions without a writer about, and every timed read hold, per P
}

// newRWSem returns an RWSem counting as o says.
func newRWSem(o Options) *RWSem {
	r := &RWSem{}
	r.init(o)
	return r
}

// init sets a new RWSem's counters up as o says.
func (r *RWSem) init(o Options) {
	r.count, r.hold, r.reads = !o.NoStats, holdSamplerOf(o.HoldSampleEvery), newReadShards()
	r.stats.init(o)
}

func (r *RWSem) Name() string   { return "rwsem" }
func (r *RWSem) Seal()          {}
func (r *RWSem) Grace() *Grace  { return nil }
func (r *RWSem) Traits() Traits { return mustTraits("rwsem") }

// Stats adds the per-P read counters to the lock's.
func (r *RWSem) Stats() Stats {
	s := r.stats.snapshot()
	if s.CountersSwitchedOn {
		r.reads.addTo(&s)
	}
	return s
}

// RLock enters the read side: RWMutex.RLock, counted on the calling P's
// own line unless a writer is about.
func (r *RWSem) RLock() ReadToken {
	switch {
	case !r.count:
		r.mu.RLock()
		return 0
	case r.writers.Load() == 0:
		r.mu.RLock()
		return r.reads.enter(r.hold, 0)
	default:
		return r.stats.readLock(r.mu.TryRLock, r.mu.RLock)
	}
}

// RUnlock leaves the read side entered with t, adding its hold to the
// calling P's line if it is timed.
func (r *RWSem) RUnlock(t ReadToken) {
	if !t.timed() {
		r.mu.RUnlock()
		return
	}
	end := clock()
	r.mu.RUnlock()
	r.reads.left(r.hold, t, end)
}

// Lock enters the write side, announcing the writer to readers first.
func (r *RWSem) Lock() error {
	r.writers.Add(1)
	r.stats.writeLock(r.mu.TryLock, r.mu.Lock)
	return nil
}

// Unlock leaves the write side.
func (r *RWSem) Unlock() {
	r.stats.writeUnlock(r.mu.Unlock)
	r.writers.Add(-1)
}

// RCU lets readers run without a lock: the read side only marks a sharded,
// padded grace-period counter, so no cache line is shared between readers
// on different CPUs. Writers serialise on one writer mutex and publish
// copy-on-write with atomic pointers; teardown of what readers may still
// see is ordered after a grace period (Grace).
//
// With counters on, a read-side critical section is counted as a read
// acquisition (never contended) on the P's own line, as rwsem's readers
// are, and one in HoldSampleEvery is timed, its start carried in the
// token (holdtime.go).
//
// Reader cost: two atomic adds on a per-shard line, and with counters on
// one more on a per-P line (and on one section in HoldSampleEvery, two
// clock reads and a second add there). Writer cost: the writer mutex plus
// copying the O(log n) path of the changed structure, and a grace period
// before teardown. Allocation: writers allocate the copies; readers
// allocate nothing. Staleness: a reader may see the tree as it was when
// its read side began; it never sees a half-made change.
type RCU struct {
	writer sync.Mutex
	stats  lockStats // writer counters (writeStart protected by writer); readers take no lock
	_      [cacheLine]byte
	// Read by every reader, so off the writers' line.
	grace *Grace      // immutable pointer
	count bool        // immutable: counters on (a copy of !stats.off)
	hold  holdSampler // immutable: a copy of stats.hold
	_     [cacheLine - 16]byte
	reads *readShards // immutable pointer (newReadShards); read-side sections entered, and their timed holds, per P
}

func (r *RCU) Name() string   { return "rcu" }
func (r *RCU) Lock() error    { r.stats.writeLock(r.writer.TryLock, r.writer.Lock); return nil }
func (r *RCU) Unlock()        { r.stats.writeUnlock(r.writer.Unlock) }
func (r *RCU) Seal()          {}
func (r *RCU) Grace() *Grace  { return r.grace }
func (r *RCU) Traits() Traits { return mustTraits("rcu") }

// RLock enters a read-side critical section (Grace.ReadLock), counted on
// the calling P's own line.
func (r *RCU) RLock() ReadToken {
	p := pshard.P() // one ask for both counters
	t := r.grace.ReadLockOn(p)
	if !r.count {
		return t
	}
	return r.reads.enterOn(p, r.hold, t)
}

// RUnlock leaves the read-side critical section t came from.
func (r *RCU) RUnlock(t ReadToken) {
	if !t.timed() {
		r.grace.ReadUnlock(t)
		return
	}
	end := clock()
	r.grace.ReadUnlock(t.inner())
	r.reads.left(r.hold, t, end)
}

// Stats reports the read-side sections, the writer's counters and the
// grace-period counters.
func (r *RCU) Stats() Stats {
	s := r.stats.snapshot()
	if s.CountersSwitchedOn {
		r.reads.addTo(&s)
	}
	s.Grace = r.grace.Stats()
	return s
}

// None takes no lock at all: the baseline a read-only tree could reach.
// Until Seal, writers (the tree's builder) serialise on a build mutex; after
// Seal every Lock fails with ErrReadOnly. The build mutex is counted as
// the write side (a writer that Seal refuses once it has the mutex
// included); the read side takes nothing and is not counted
// (Stats.ReadSideCounted is false).
//
// Reader cost: nothing. Writer cost: refused once sealed. Allocation: none.
// Staleness: undefined if anything wrote concurrently, which is why writers
// are refused.
type None struct {
	build  sync.Mutex  // serialises writers until sealed
	stats  lockStats   // the build mutex's; writeStart protected by build
	sealed atomic.Bool // set once by Seal
}

func (n *None) Name() string      { return "none" }
func (n *None) RLock() ReadToken  { return 0 }
func (n *None) RUnlock(ReadToken) {}
func (n *None) Grace() *Grace     { return nil }
func (n *None) Traits() Traits    { return mustTraits("none") }

// Stats reports the build mutex's counters; the read side is not counted.
func (n *None) Stats() Stats {
	s := n.stats.snapshot()
	s.ReadSideCounted = false
	return s
}

// Lock serialises builders until the strategy is sealed, then refuses.
func (n *None) Lock() error {
	if n.sealed.Load() {
		return ErrReadOnly
	}
	n.stats.writeLock(n.build.TryLock, n.build.Lock)
	if n.sealed.Load() {
		n.Unlock()
		return ErrReadOnly
	}
	return nil
}

// Seal waits for a writer inside the build side to leave, then refuses
// every later one.
func (n *None) Seal() {
	n.build.Lock()
	n.sealed.Store(true)
	n.build.Unlock()
}

// Unlock leaves the build side.
func (n *None) Unlock() { n.stats.writeUnlock(n.build.Unlock) }
