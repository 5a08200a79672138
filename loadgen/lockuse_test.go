package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
)

// A sim run reports how its tree's lock was used over each phase: under
// mutex every operation takes the read side, and the time it was held is
// part of the phase's wall time, summed over workers that exclude each
// other.
func TestRunReportsLockUse(t *testing.T) {
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "mutex"}, Threads: 2, Times: 2000})
	require.NoError(t, err)
	for name, ph := range map[string]Phase{"single": r.Single, "concur": r.Concur} {
		u := ph.Lock
		if u == nil {
			t.Fatalf("%s: no lock use", name)
		}
		var ops int64
		for _, w := range ph.Workers {
			ops += w.Ops
		}
		if u.ReadAcquisitions < ops || u.Wall != ph.Wall || u.HoldSampleEvery != locking.DefaultHoldSampleEvery {
			t.Errorf("%s: %+v: want at least %d read acquisitions over %v, sampled 1 in %d", name, u, ops, ph.Wall, locking.DefaultHoldSampleEvery)
		}
		// Hold times are sampled, one acquisition in HoldSampleEvery, and
		// scaled up: a sampled hold during which the holder was preempted
		// makes the estimate exceed 1 on a loaded machine. What cannot
		// fail by chance: the mutex's holds never overlap, so the sampled
		// holds sum to at most the wall, and the estimate to at most
		// HoldSampleEvery.
		if read, _ := u.Utilization(); read <= 0 || read > float64(u.HoldSampleEvery) {
			t.Errorf("%s: mutex read utilization %.3f: want above 0 and at most %d (the sampling factor)", name, read, u.HoldSampleEvery)
		}
	}
	c := CellRunOf(r)
	if !c.LockCounted || c.LockRead <= 0 {
		t.Errorf("cell run %+v: want the lock figures", c)
	}
}

// The real /sys has no lock counters.
func TestLockUseAbsentWithoutCounters(t *testing.T) {
	if use := measureLock(nil, func() time.Duration { return time.Second }); use != nil {
		t.Errorf("got %+v without a probe", use)
	}
	pt, err := newPathTarget(t.TempDir())
	require.NoError(t, err)
	if probe := lockProbeOf(pt); probe != nil {
		t.Error("a directory without a stats file has a lock probe")
	}
}

func TestLockUseContended(t *testing.T) {
	u := LockUse{Stats: locking.Stats{LockCounts: locking.LockCounts{ReadAcquisitions: 90, ReadContended: 9, WriteAcquisitions: 10, WriteContended: 1, ReadHeld: 500 * time.Millisecond, WriteHeld: 100 * time.Millisecond}}, Wall: time.Second}
	if got := u.Contended(); got != 0.1 {
		t.Errorf("Contended() = %v, want 0.1", got)
	}
	if r, w := u.Utilization(); r != 0.5 || w != 0.1 {
		t.Errorf("Utilization() = %v, %v; want 0.5, 0.1", r, w)
	}
}
