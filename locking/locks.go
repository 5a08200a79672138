package locking

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernfsim/kernfsim/internal/pshard"
)

// lockStats counts acquisitions of one lock. It sits right after the lock
// word in the lock's struct, so the uncontended path adds one atomic add on
// a cache line the acquirer has just written anyway (measured with
// BenchmarkLock: see the README). The contended path also reads the clock
// twice. A contended acquisition is counted as soon as the acquirer finds
// the lock held, before it waits; wait time is added when it gets the lock.
type lockStats struct {
	readAcq, writeAcq      atomic.Int64 // accessed atomically
	readCont, readWaitNs   atomic.Int64 // accessed atomically
	writeCont, writeWaitNs atomic.Int64 // accessed atomically
	off                    bool         // immutable: counters switched off
}

// read takes a read lock through try and wait, counting it.
func (s *lockStats) read(try func() bool, wait func()) {
	if s.off {
		wait()
		return
	}
	if try() {
		s.readAcq.Add(1)
		return
	}
	s.readCont.Add(1)
	start := time.Now()
	wait()
	s.readWaitNs.Add(int64(time.Since(start)))
	s.readAcq.Add(1)
}

// write takes a write lock through try and wait, counting it.
func (s *lockStats) write(try func() bool, wait func()) {
	if s.off {
		wait()
		return
	}
	if try() {
		s.writeAcq.Add(1)
		return
	}
	s.writeCont.Add(1)
	start := time.Now()
	wait()
	s.writeWaitNs.Add(int64(time.Since(start)))
	s.writeAcq.Add(1)
}

func (s *lockStats) snapshot() Stats {
	if s.off {
		return Stats{}
	}
	return Stats{
		ReadAcquisitions:   s.readAcq.Load(),
		ReadContended:      s.readCont.Load(),
		ReadWait:           time.Duration(s.readWaitNs.Load()),
		WriteAcquisitions:  s.writeAcq.Load(),
		WriteContended:     s.writeCont.Load(),
		WriteWait:          time.Duration(s.writeWaitNs.Load()),
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
	stats lockStats // right after the lock word: see lockStats
}

func (m *Mutex) Name() string      { return "mutex" }
func (m *Mutex) RLock() ReadToken  { m.stats.read(m.mu.TryLock, m.mu.Lock); return 0 }
func (m *Mutex) RUnlock(ReadToken) { m.mu.Unlock() }
func (m *Mutex) Lock() error       { m.stats.write(m.mu.TryLock, m.mu.Lock); return nil }
func (m *Mutex) Unlock()           { m.mu.Unlock() }
func (m *Mutex) Seal()             {}
func (m *Mutex) Grace() *Grace     { return nil }
func (m *Mutex) Traits() Traits    { return mustTraits("mutex") }
func (m *Mutex) Stats() Stats      { return m.stats.snapshot() }

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
// the calling P's own line (pshard.Of), not on the lock's. (Trying
// TryRLock first, as the other locks are counted, is a load and a
// compare-and-swap that fails whenever another CPU moved the count in
// between: in the sim it took a fifth of the CPU at 2 threads and made
// rwsem slower than mutex; an add on the lock's line beside RLock's own
// still pulled the line once more per acquisition.) A reader that a
// writer overtakes between the writer check and RLock is counted as
// uncontended; its wait still shows in its operation's latency.
//
// Reader cost: one atomic add on the lock's shared reader count to enter
// and one to leave, so readers on different CPUs bounce one cache line, as
// kernfs readers do; with counters on, an add
// on the P's own line (pshard.Of). Writer cost: exclusive, waits for readers to drain.
// Allocation: none. Staleness: none.
type RWSem struct {
	mu    sync.RWMutex
	stats lockStats // writer counters, and readers' when a writer is about
	_     [cacheLine]byte
	// writers is how many writers are in Lock or hold the lock: read by
	// every reader, written only by writers, so off the lock's line.
	writers atomic.Int32 // accessed atomically
	count   bool         // immutable: counters on (a copy of !stats.off off the lock's line)
	_       [cacheLine - 8]byte
	reads   [rwsemReadShards]paddedCounter // read acquisitions without a writer about, per P (pshard.Of)
}

// rwsemReadShards is how many per-P counters RWSem's readers count on.
const rwsemReadShards = 64

func (r *RWSem) Name() string      { return "rwsem" }
func (r *RWSem) RUnlock(ReadToken) { r.mu.RUnlock() }
func (r *RWSem) Seal()             {}
func (r *RWSem) Grace() *Grace     { return nil }
func (r *RWSem) Traits() Traits    { return mustTraits("rwsem") }

// Stats adds the per-P read acquisitions to the lock's counters.
func (r *RWSem) Stats() Stats {
	s := r.stats.snapshot()
	if s.CountersSwitchedOn {
		for i := range r.reads {
			s.ReadAcquisitions += r.reads[i].n.Load()
		}
	}
	return s
}

// RLock enters the read side: RWMutex.RLock, counted on the calling P's
// own line unless a writer is about.
func (r *RWSem) RLock() ReadToken {
	switch {
	case !r.count:
		r.mu.RLock()
	case r.writers.Load() == 0:
		r.mu.RLock()
		r.reads[pshard.Of(rwsemReadShards-1)].n.Add(1)
	default:
		r.stats.read(r.mu.TryRLock, r.mu.RLock)
	}
	return 0
}

// Lock enters the write side, announcing the writer to readers first.
func (r *RWSem) Lock() error {
	r.writers.Add(1)
	r.stats.write(r.mu.TryLock, r.mu.Lock)
	return nil
}

// Unlock leaves the write side.
func (r *RWSem) Unlock() {
	r.mu.Unlock()
	r.writers.Add(-1)
}

// RCU lets readers run without a lock: the read side only marks a sharded,
// padded grace-period counter, so no cache line is shared between readers
// on different CPUs. Writers serialise on one writer mutex and publish
// copy-on-write with atomic pointers; teardown of what readers may still
// see is ordered after a grace period (Grace).
//
// Reader cost: two atomic adds on a per-shard line. Writer cost: the writer
// mutex plus copying the O(log n) path of the changed structure, and a
// grace period before teardown. Allocation: writers allocate the copies;
// readers allocate nothing. Staleness: a reader may see the tree as it was
// when its read side began; it never sees a half-made change.
type RCU struct {
	writer sync.Mutex
	stats  lockStats // writer counters only: readers take no lock
	grace  *Grace    // immutable pointer
}

func (r *RCU) Name() string        { return "rcu" }
func (r *RCU) RLock() ReadToken    { return r.grace.ReadLock() }
func (r *RCU) RUnlock(t ReadToken) { r.grace.ReadUnlock(t) }
func (r *RCU) Lock() error         { r.stats.write(r.writer.TryLock, r.writer.Lock); return nil }
func (r *RCU) Unlock()             { r.writer.Unlock() }
func (r *RCU) Seal()               {}
func (r *RCU) Grace() *Grace       { return r.grace }
func (r *RCU) Traits() Traits      { return mustTraits("rcu") }

// Stats reports writer acquisitions and the grace-period counters.
func (r *RCU) Stats() Stats {
	s := r.stats.snapshot()
	s.Grace = r.grace.Stats()
	return s
}

// None takes no lock at all: the baseline a read-only tree could reach.
// Until Seal, writers (the tree's builder) serialise on a build mutex; after
// Seal every Lock fails with ErrReadOnly.
//
// Reader cost: nothing. Writer cost: refused once sealed. Allocation: none.
// Staleness: undefined if anything wrote concurrently, which is why writers
// are refused.
type None struct {
	build  sync.Mutex  // serialises writers until sealed
	stats  lockStats   // stays zero: nothing is locked
	sealed atomic.Bool // set once by Seal
}

func (n *None) Name() string      { return "none" }
func (n *None) RLock() ReadToken  { return 0 }
func (n *None) RUnlock(ReadToken) {}
func (n *None) Grace() *Grace     { return nil }
func (n *None) Traits() Traits    { return mustTraits("none") }
func (n *None) Stats() Stats      { return n.stats.snapshot() }

// Lock serialises builders until the strategy is sealed, then refuses.
func (n *None) Lock() error {
	if n.sealed.Load() {
		return ErrReadOnly
	}
	n.build.Lock()
	if n.sealed.Load() {
		n.build.Unlock()
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
func (n *None) Unlock() { n.build.Unlock() }
