package locking

import "time"

// Stats are a strategy's lock counters since it was made, per side, as
// Linux's /proc/lock_stat (CONFIG_LOCK_STAT) gives them per lock class:
// acquisitions, contentions, wait time and hold time. A Stats is a
// snapshot, a plain value; Sub makes the delta of two and Utilization
// divides its hold time by the wall time between them.
//
// The read side is the lock taken shared (rwsem, kernfs64's tree rwsem,
// percpu, bravo), the one mutex (mutex), or a read-side critical section
// (rcu, which takes no lock: its read side is never contended and waits
// for nothing). none's readers take
// nothing and are not counted: ReadSideCounted is false and the read
// counters stay zero. The write side is the writer lock of each strategy
// (none's until Seal, the tree's builders).
//
// Counts and wait times are exact. Hold times are estimates: the holds of
// one acquisition in HoldSampleEvery, per side and per P, each counted
// HoldSampleEvery times (see holdtime.go), added when the lock is
// released. With HoldSampleEvery 1 they are exact.
type Stats struct {
	LockCounts // the tree lock's: ReadAcquisitions, ReadHeld, WriteAcquisitions, ...

	// HoldSampleEvery is the sample rate of ReadHeld and WriteHeld: one
	// acquisition in HoldSampleEvery is timed (Options.HoldSampleEvery,
	// rounded up to a power of two). 0 with the counters off.
	HoldSampleEvery int
	// ReadSideCounted is whether the read counters count anything: false
	// under none, whose readers take nothing, and with the counters off.
	ReadSideCounted bool

	// ReadFast is how many of ReadAcquisitions took a fast path that
	// writes no line other CPUs' readers write: percpu's readers while
	// rcu_sync lets them (readers_fast), bravo's readers published in its
	// visible-readers table. 0 under the other strategies.
	ReadFast int64

	// Attr and OpenFile are the counters of the locks a strategy has
	// besides its tree lock, whose counters are the fields above:
	// kernfs64's attribute rwsem (Traits.SeparateAttrLock) and its hashed
	// open-file mutexes (Traits.OpenFileLocks, write side only, summed
	// over the mutexes). Zero under the other strategies.
	Attr, OpenFile LockCounts

	Grace              GraceStats // zero unless the strategy has a Grace
	CountersSwitchedOn bool
}

// LockCounts are one lock's counters, per side: acquisitions, contentions
// and wait time exact, hold time an estimate sampled as
// Stats.HoldSampleEvery says.
type LockCounts struct {
	ReadAcquisitions int64         // read sides entered
	ReadContended    int64         // of those, found a writer in the way and waited
	ReadWait         time.Duration // time contended read acquisitions waited
	ReadHeld         time.Duration // time the read side was held, summed over holders (estimate)

	WriteAcquisitions int64         // write sides entered
	WriteContended    int64         // of those, found the lock held and waited
	WriteWait         time.Duration // time contended write acquisitions waited
	WriteHeld         time.Duration // time the write side was held (estimate)
}

// add is c plus d.
func (c LockCounts) add(d LockCounts) LockCounts {
	return LockCounts{
		ReadAcquisitions: c.ReadAcquisitions + d.ReadAcquisitions, ReadContended: c.ReadContended + d.ReadContended,
		ReadWait: c.ReadWait + d.ReadWait, ReadHeld: c.ReadHeld + d.ReadHeld,
		WriteAcquisitions: c.WriteAcquisitions + d.WriteAcquisitions, WriteContended: c.WriteContended + d.WriteContended,
		WriteWait: c.WriteWait + d.WriteWait, WriteHeld: c.WriteHeld + d.WriteHeld,
	}
}

// Sub returns the counters' change from before, an earlier snapshot of
// the same lock, to c.
func (c LockCounts) Sub(before LockCounts) LockCounts {
	d := c
	d.ReadAcquisitions -= before.ReadAcquisitions
	d.ReadContended -= before.ReadContended
	d.ReadWait -= before.ReadWait
	d.ReadHeld -= before.ReadHeld
	d.WriteAcquisitions -= before.WriteAcquisitions
	d.WriteContended -= before.WriteContended
	d.WriteWait -= before.WriteWait
	d.WriteHeld -= before.WriteHeld
	return d
}

// Sub returns the counters' change from before, an earlier snapshot of the
// same strategy, to s. Levels (HoldSampleEvery, ReadSideCounted,
// CountersSwitchedOn, and the Grace levels; see GraceStats.Sub) are s's.
func (s Stats) Sub(before Stats) Stats {
	d := s
	d.LockCounts = s.LockCounts.Sub(before.LockCounts)
	d.ReadFast -= before.ReadFast
	d.Attr = s.Attr.Sub(before.Attr)
	d.OpenFile = s.OpenFile.Sub(before.OpenFile)
	d.Grace = s.Grace.Sub(before.Grace)
	return d
}

// Utilization is the time each side was held per unit of wall time: call
// it on a delta (later.Sub(earlier)) with the wall time between the two
// snapshots. For a side that excludes (every write side, and mutex's read
// side) it is the fraction of the time the side was busy, at most 1 but
// for sampling error; under mutex both sides are one lock and read+write
// is its busy fraction. For a shared read side (rwsem, rcu) it is the mean
// number of holders, which exceeds 1 when readers overlap. Holds are added
// when they end, so over an interval not much longer than the holds a
// hold that began before it counts whole. It is 0, 0 for wall <= 0.
func (s Stats) Utilization(wall time.Duration) (read, write float64) {
	if wall <= 0 {
		return 0, 0
	}
	return float64(s.ReadHeld) / float64(wall), float64(s.WriteHeld) / float64(wall)
}

// Sub returns the counters' change from before, an earlier snapshot of
// the same engine, to g; the levels (LatencyMax, Waiters, Pending) are
// g's.
func (g GraceStats) Sub(before GraceStats) GraceStats {
	d := g
	d.GracePeriods -= before.GracePeriods
	d.Expedited -= before.Expedited
	d.LatencyTotal -= before.LatencyTotal
	d.CallbacksQueued -= before.CallbacksQueued
	d.CallbacksRun -= before.CallbacksRun
	d.Waits -= before.Waits
	d.Checks -= before.Checks
	return d
}
