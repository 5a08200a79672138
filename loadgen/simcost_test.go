package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/internal/testproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// The spin loop does about the work it was asked for: a thousand spins of
// 20us cannot be optimised away, and take neither far less than 20ms nor
// many times that. Both bounds are loose: the calibration runs once per
// process, and a busy machine that preempts it makes every later spin
// shorter by as much (speed figures belong in benchmarks, not here).
func TestSpinIsCalibratedWork(t *testing.T) {
	n := spinIterations(20 * time.Microsecond)
	if n == 0 || spinIterations(0) != 0 {
		t.Fatalf("spinIterations: got %d for 20us and %d for 0", n, spinIterations(0))
	}
	best := time.Duration(1<<63 - 1)
	for range 3 {
		t0 := time.Now()
		for range 1000 {
			spinSink(spin(n))
		}
		best = min(best, time.Since(t0))
	}
	if best < 5*time.Millisecond || best > time.Second {
		t.Errorf("1000 spins of 20us took %v, want about 20ms", best)
	}
}

// A sim with a cost takes at least about the cost per op (the spin
// cannot be skipped; on a busy machine or under the race detector it only
// takes longer), and its reports say so.
func TestSimCostRun(t *testing.T) {
	c := Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "rcu", SimCost: 5 * time.Microsecond}, Threads: 1, Times: 2000}
	slow, err := Run(context.Background(), c)
	require.NoError(t, err)
	if d := slow.SinglePerOp(); d < 4*time.Microsecond {
		t.Errorf("with a 5us cost an op took %v, want at least about 5us", d)
	}
}

func TestSimCostBadInput(t *testing.T) {
	for _, c := range []Config{
		{Target: targets.Target{Kind: targets.TargetSim, SimCost: -time.Microsecond}},
		{Target: targets.Target{Kind: targets.TargetSim, SimCost: 2 * time.Second}},
		{Target: targets.Target{Kind: targets.TargetPath, Dir: "/", SimCost: time.Microsecond}},
	} {
		_, err := Run(context.Background(), c)
		var ce *setting.Error
		if !errors.As(err, &ce) || ce.Field != "SimCost" {
			t.Errorf("Run with SimCost %v on %s: got %v, want a ConfigError on SimCost", c.Target.SimCost, c.Target.Kind, err)
		}
	}
	_, err := CalibrateSimCost(context.Background(), Config{Op: workload.OpHwloc}, "/sys", "rwsem")
	var ce *setting.Error
	if !errors.As(err, &ce) {
		t.Errorf("calibrating hwloc: got %v, want a ConfigError", err)
	}
}

// A sim with work outside the lock makes the kernel's shared writes, the
// bare sim does not, and the calibration measures the sim's own part with
// them (so that the calibrated sim's single thread takes what /sys takes).
func TestSimCostMakesSharedWrites(t *testing.T) {
	for _, tc := range []struct {
		t    targets.Target
		want bool
	}{
		{targets.Target{Kind: targets.TargetSim}, false},
		{targets.Target{Kind: targets.TargetSim, SimCost: time.Microsecond}, true},
		{targets.Target{Kind: targets.TargetSim, SimShared: true}, true},
		{targets.Target{Kind: targets.TargetPath, Dir: "/sys", SimShared: true}, false},
	} {
		if got := tc.t.SimSharedWrites(); got != tc.want {
			t.Errorf("%+v: sharedWrites() = %v, want %v", tc.t, got, tc.want)
		}
	}
	onDir, bare := calibrationRuns(Config{Target: targets.Target{Kind: targets.TargetSim, SimCost: time.Microsecond}}, "/sys", "rwsem")
	if onDir.Target.Kind != targets.TargetPath || onDir.Target.SimSharedWrites() {
		t.Errorf("calibration's real side: target %+v, want the directory", onDir.Target)
	}
	if bare.Target.Kind != targets.TargetSim || bare.Target.SimCost != 0 || !bare.Target.SimSharedWrites() || bare.Threads != 1 {
		t.Errorf("calibration's sim side: %+v, threads %d: want the sim with shared writes, no cost, one thread", bare.Target, bare.Threads)
	}
	if err := (Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys", SimShared: true}}).validateTarget(); err == nil {
		t.Errorf("SimShared on a path target: accepted, want an error")
	}
	var js bytes.Buffer
	require.NoError(t, json.NewEncoder(&js).Encode(targets.NewJSONTarget(targets.Target{Kind: targets.TargetSim, Lock: "rwsem", SimCost: time.Microsecond})))
	if !strings.Contains(js.String(), `"sim_shared_writes":true`) {
		t.Errorf("JSON target %s: want sim_shared_writes true", js.String())
	}
}

// Calibration against /sys gives the difference of the two single-thread
// per-ops, and never less than 0.
func TestCalibrateSimCost(t *testing.T) {
	testproc.RequireSys(t)
	cal, err := CalibrateSimCost(context.Background(), Config{Times: 500}, "/sys", "rwsem")
	require.NoError(t, err)
	if cal.Real <= 0 || cal.Bare <= 0 || cal.Cost != max(0, cal.Real-cal.Bare) || cal.Op != "files" {
		t.Errorf("calibration %+v: want positive per-ops, Cost = Real - Bare, op files", cal)
	}
	if !strings.Contains(cal.String(), "of private work outside the lock per op") {
		t.Errorf("calibration line %q", cal)
	}
}

// The descriptor table hands out the lowest free descriptor, takes back
// what it gave, and a nil table hands out none.
func TestFDTable(t *testing.T) {
	tab := newFDTable(3)
	a, b, c := tab.alloc(), tab.alloc(), tab.alloc()
	if a != 0 || b != 1 || c != 2 {
		t.Fatalf("allocations %d %d %d, want 0 1 2", a, b, c)
	}
	tab.install(b)
	tab.close(b)
	if got := tab.alloc(); got != b {
		t.Errorf("after closing %d: allocated %d, want the lowest free, %d", b, got, b)
	}
	if tab.slots[b].Load() != nil {
		t.Errorf("descriptor %d reallocated with its old file still installed", b)
	}
	for range 64 - 3 {
		if tab.alloc() < 0 {
			t.Fatal("table full before 64 descriptors")
		}
	}
	if got := tab.alloc(); got != -1 {
		t.Errorf("a full table handed out %d, want -1", got)
	}
	var none *fdTable
	if got := none.alloc(); got != -1 {
		t.Errorf("nil table handed out %d", got)
	}
	none.install(0)
	none.close(0)

	// The process takes a descriptor and a cred reference per open and
	// gives both back, whether the open succeeded or not.
	proc := newSimProcess(2)
	fd := proc.open()
	proc.opened(fd)
	failed := proc.open()
	proc.close(failed)
	proc.close(fd)
	if n := proc.cred.Load(); n != 0 {
		t.Errorf("cred references after every open closed: %d, want 0", n)
	}
	if got := proc.open(); got != 0 {
		t.Errorf("after every open closed: allocated %d, want 0", got)
	}
	var noProc *simProcess
	noProc.opened(noProc.open())
	noProc.close(-1)
}
