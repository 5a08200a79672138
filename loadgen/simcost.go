package loadgen

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// The sim's work outside the lock.
//
// A bare sim operation is the kernfs part of a system call alone. It costs
// a small fraction of the kernel's whole call
// (docs/notes/2026-12-01-calibrated-sim.md). So the share of each
// operation spent under the tree's lock is many times the kernel's, and
// so is the contention. Target.SimCost gives each sim operation the rest
// of the kernel's work: syscall entry and exit, file allocation, and the
// VFS walk around kernfs. It is a spin loop of a fixed number of
// iterations, calibrated once per process. It runs before the walk and
// outside any lock. It is CPU work, not a sleep, so threads beyond the
// CPUs queue for it as they queue for the kernel's.

// spinRate is the spin loop's iterations per nanosecond on this machine.
var spinRate = sync.OnceValue(func() float64 {
	const n = 1 << 18
	best := time.Duration(1<<63 - 1)
	for range 7 {
		t0 := time.Now()
		spinSink(spin(n))
		best = min(best, time.Since(t0))
	}
	return float64(n) / float64(max(best, 1))
})

// spinIterations is how many spin iterations take d.
func spinIterations(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(float64(d)*spinRate() + 0.5)
}

// spin runs n rounds of a linear congruential generator: a chain of
// dependent multiplications that touches no memory.
//
//go:noinline
func spin(n uint64) uint64 {
	x := n
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// spinSink keeps spin's result alive, so the loop is not optimised away.
func spinSink(x uint64) { runtime.KeepAlive(x) }

// SimCalibration is how a SimCost was derived: the operation's
// single-thread per-op against a real directory (the kernel's whole
// system call) less the bare sim's under the same operation (its kernfs
// part), on the same machine.
type SimCalibration struct {
	Dir  string        // the directory measured, /sys
	Op   string        // the op label: files, missing, stat, ...
	Lock string        // the bare sim's strategy
	Real time.Duration // single-thread per-op against Dir: the best of the tries
	Bare time.Duration // single-thread per-op of the sim with the kernel's shared writes and no spin: the best of the tries
	Cost time.Duration // Real - Bare, at least 0: the SimCost it gives
}

// String is the calibration in a line.
func (c SimCalibration) String() string {
	return fmt.Sprintf("%s: %s single-thread %s, sim (%s, shared writes) %s: %s of private work outside the lock per op",
		c.Op, c.Dir, textout.Dur(c.Real), c.Lock, textout.Dur(c.Bare), textout.Dur(c.Cost))
}

// calibratable reports whether op is one system call-level operation, whose
// cost CalibrateSimCost can derive per operation.
func calibratable(op workload.Op) bool {
	return op != workload.OpHwloc && op != workload.OpLstopo && op != workload.OpColdplug
}

// calibrationRuns are c's single-thread runs against dir and on the bare
// sim under lock.
func calibrationRuns(c Config, dir, lock string) (onDir, bare Config) {
	times := c.Times
	if times == 0 {
		times = 2000
	}
	onDir = c
	onDir.Target, onDir.Threads, onDir.Times, onDir.Churn, onDir.Procs = targets.Target{Kind: targets.TargetPath, Dir: dir}, 1, times, 0, false
	onDir.Progress, onDir.SimCalibration = nil, nil
	bare = onDir
	bare.Target, bare.Times = c.Target, 20*times
	bare.Target.Kind, bare.Target.Lock, bare.Target.SimCost, bare.Target.SimShared = targets.TargetSim, lock, 0, true
	return onDir, bare
}

// calibrationTries is how many single-thread runs of each side a
// calibration makes, interleaved; the fastest of each counts, as the one
// least disturbed by the rest of the machine.
const calibrationTries = 3

// CalibrateSimCost measures the work the kernel does outside kernfs's lock
// for c's operation: c run single-threaded against dir, less c run on the
// sim under lock (the strategy of the kernel behind dir: rwsem for Linux
// 5.15 and later) making the kernel's shared writes (Target.SimShared), so
// that the sim with the cost it returns takes what dir takes on one
// thread, and shares with other threads what the kernel shares. c's target is ignored; its Times (default: 2000
// against dir, 20 times that on the sim) sizes each try. Operations made
// of several system calls each (hwloc, lstopo, coldplug) cannot be
// calibrated this way: give their SimCost per call instead.
func CalibrateSimCost(ctx context.Context, c Config, dir, lock string) (SimCalibration, error) {
	if c.Op == "" {
		c.Op = workload.OpOpenReadClose
	}
	cal := SimCalibration{Dir: dir, Op: OpLabel(c.Op, c.Missing), Lock: lock}
	if !calibratable(c.Op) {
		return cal, setting.NewError("SimCost", "give a duration per system call instead of auto",
			"%s makes many system calls per operation, so its cost cannot be calibrated per operation", c.Op)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return cal, setting.NewError("Calibrate", "give the directory of a real sysfs, such as /sys",
			"%s is not a directory to calibrate against", dir)
	}
	onDir, bare := calibrationRuns(c, dir, lock)
	var dirs, bares []time.Duration
	for range calibrationTries {
		for _, side := range []struct {
			name string
			cfg  Config
			into *[]time.Duration
		}{{dir, onDir, &dirs}, {"the sim with the kernel's shared writes", bare, &bares}} {
			r, err := Run(ctx, side.cfg)
			if err != nil {
				return cal, fmt.Errorf("calibrating the sim's cost: %s: %w", side.name, err)
			}
			*side.into = append(*side.into, r.SinglePerOp())
		}
	}
	cal.Real, cal.Bare = slices.Min(dirs), slices.Min(bares)
	cal.Cost = max(0, cal.Real-cal.Bare)
	return cal, nil
}
