package locking

import "time"

// Stats are a strategy's lock counters since it was made, per side, as
// Linux's /proc/lock_stat (CONFIG_LOCK_STAT) gives them per lock class:
// acquisitions, contentions, wait time and hold time. A Stats is a
// snapshot, a plain value; Sub makes the delta of two and Utilization
// divides its hold time by the wall time between them.
//
// The read side is the lock taken shared (rwsem), the one mutex (mutex),
// or a read-side critical section (rcu, which takes no lock: its read
// side is never contended and waits for nothing). none's readers take
// nothing and are not counted: ReadSideCounted is false and the read
// counters stay zero. The write side is the writer lock of each strategy
// (none's until Seal, the tree's builders).
//
// Counts and wait times are exact. Hold times are estimates: the holds of
// one acquisition in HoldSampleEvery, per side and per P, each counted
// HoldSampleEvery times (see holdtime.go), added when the lock is
// released. With HoldSampleEvery 1 they are exact.
type Stats struct {
	ReadAcquisitions int64         // read sides entered
	ReadContended    int64         // of those, found a writer in the way and waited
	ReadWait         time.Duration // time contended read acquisitions waited
	ReadHeld         time.Duration // time the read side was held, summed over holders (estimate)

	WriteAcquisitions int64         // write sides entered
	WriteContended    int64         // of those, found the lock held and waited
	WriteWait         time.Duration // time contended write acquisitions waited
	WriteHeld         time.Duration // time the write side was held (estimate)

	// HoldSampleEvery is the sample rate of ReadHeld and WriteHeld: one
	// acquisition in HoldSampleEvery is timed (Options.HoldSampleEvery,
	// rounded up to a power of two). 0 with the counters off.
	HoldSampleEvery int
	// ReadSideCounted is whether the read counters count anything: false
	// under none, whose readers take nothing, and with the counters off.
	ReadSideCounted bool

	Grace              GraceStats // zero unless the strategy has a Grace
	CountersSwitchedOn bool
}

// Sub returns the counters' change from before, an earlier snapshot of the
// same strategy, to s. Levels (HoldSampleEvery, ReadSideCounted,
// CountersSwitchedOn, and the Grace levels; see GraceStats.Sub) are s's.
func (s Stats) Sub(before Stats) Stats {
	d := s
	d.ReadAcquisitions -= before.ReadAcquisitions
	d.ReadContended -= before.ReadContended
	d.ReadWait -= before.ReadWait
	d.ReadHeld -= before.ReadHeld
	d.WriteAcquisitions -= before.WriteAcquisitions
	d.WriteContended -= before.WriteContended
	d.WriteWait -= before.WriteWait
	d.WriteHeld -= before.WriteHeld
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
