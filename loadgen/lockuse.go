package loadgen

import (
	"time"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/locking"
)

// LockUse is how the target's lock was used during a phase, as lock_stat
// gives it. It holds the change of the strategy's counters over the phase
// (locking.Stats.Sub) and the phase's wall time. A sim target's counters
// are its tree's strategy's. A kernfsim mount's are read from its stats
// file before and after the phase. Those reads take the lock too, and are
// counted. A target without counters (the real /sys) has none.
type LockUse struct {
	locking.Stats               // the counters' change over the phase
	Wall          time.Duration // the phase's wall time, which Utilization divides by
}

// Utilization is the time each side was held per unit of wall time
// (locking.Stats.Utilization). For an exclusive side it is the fraction
// of the phase it was busy. Every write side is exclusive, and so is
// mutex's read side. For a shared read side it is the mean number of
// readers inside.
func (u LockUse) Utilization() (read, write float64) { return u.Stats.Utilization(u.Wall) }

// Contended is the fraction of acquisitions, both sides, that found the
// lock held and waited.
func (u LockUse) Contended() float64 {
	acq := u.ReadAcquisitions + u.WriteAcquisitions
	if acq == 0 {
		return 0
	}
	return float64(u.ReadContended+u.WriteContended) / float64(acq)
}

// lockProbe reads a target's lock counters.
type lockProbe func() (locking.Stats, error)

// lockProbeOf is t's probe, or nil if it has no counters: a sim target's
// strategy, or the stats file of a kernfsim mount.
func lockProbeOf(t target) lockProbe {
	switch t := t.(type) {
	case *simTarget:
		s := t.t.Strategy()
		return func() (locking.Stats, error) { return s.Stats(), nil }
	case *pathTarget:
		probe := func() (locking.Stats, error) {
			c, err := client.ReadStats(t.d.Path(""))
			if err != nil {
				return locking.Stats{}, err
			}
			return c.LockStats(), nil
		}
		if _, err := probe(); err != nil {
			return nil // not a kernfsim mount (the real /sys), or a server without lock counters
		}
		return probe
	}
	return nil
}

// measureLock runs phase between two readings of probe and returns the
// lock's use over it; nil if probe is nil or a reading failed (the
// server went away: the phase's own errors say so).
func measureLock(probe lockProbe, phase func() time.Duration) *LockUse {
	if probe == nil {
		phase()
		return nil
	}
	before, err := probe()
	wall := phase()
	if err != nil {
		return nil
	}
	after, err := probe()
	if err != nil || !after.CountersSwitchedOn {
		return nil
	}
	return &LockUse{Stats: after.Sub(before), Wall: wall}
}
