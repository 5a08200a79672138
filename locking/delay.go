package locking

import "time"

// MaxHoldDelay is the longest Options.HoldDelay New accepts.
const MaxHoldDelay = 10 * time.Millisecond

// delayed is a strategy whose tree lock's critical sections are each
// lengthened by d: RLock and Lock spin for d after they acquire, so every
// hold of either side lasts d longer, and the counters see it (the spin
// is inside the timed hold). It checks the binding model: a lock whose
// serial time per operation is raised toward the operation's whole time
// must stop scaling where the model says (scripts/measure/lock-delay.sh).
// The attribute and open-file locks are not delayed.
type delayed struct {
	Strategy
	d time.Duration // immutable
}

// delayedLockers is delayed for a strategy that also has attribute and
// open-file locks (kernfs64, kernfs74), which it passes on as they are.
type delayedLockers struct {
	*delayed
	AttrLocker
	OpenFileLocker
}

// withHoldDelay is s with its tree lock's holds lengthened by d, or s if d
// is 0.
func withHoldDelay(s Strategy, d time.Duration) Strategy {
	if d <= 0 {
		return s
	}
	w := &delayed{Strategy: s, d: d}
	a, isA := s.(AttrLocker)
	f, isF := s.(OpenFileLocker)
	if isA || isF {
		return &delayedLockers{delayed: w, AttrLocker: a, OpenFileLocker: f}
	}
	return w
}

func (s *delayed) RLock() ReadToken {
	t := s.Strategy.RLock()
	spinFor(s.d)
	return t
}

func (s *delayed) Lock() error {
	if err := s.Strategy.Lock(); err != nil {
		return err
	}
	spinFor(s.d)
	return nil
}

// spinFor busy-waits for d: a critical section that holds its CPU, as a
// longer one would, not a sleep.
func spinFor(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}
