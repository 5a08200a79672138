package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

func TestCompareSim(t *testing.T) {
	var order []string
	cc := CompareConfig{
		Rows:    []Row{{targets.Target{Kind: targets.TargetSim, Lock: "mutex", Tree: simTree(4)}}, {targets.Target{Kind: targets.TargetSim, Lock: "rcu", Tree: simTree(4)}}},
		Ops:     []string{"files", "missing"},
		Threads: []int{1, 3},
		Times:   20, SimTimes: 50, Repeats: 2, MinDuration: -1, WarmUp: time.Millisecond, PinSingle: true,
		Progress: func(p CompareProgress) { order = append(order, p.Next) },
	}
	r, err := Compare(context.Background(), cc)
	require.NoError(t, err)
	if len(r.Cells) != 2*2*2 || len(order) != 2+2*len(r.Cells) {
		t.Fatalf("%d cells, %d runs: want 2 warm-ups, then 8 cells run twice", len(r.Cells), len(order))
	}
	if order[0] != "sim mutex warm-up" || order[1] != "sim rcu warm-up" {
		t.Errorf("run order %q: want each row warmed up first", order)
	}
	// Interleaved: rows vary fastest, forward in the first repeat and
	// backward in the second.
	runs := order[2:]
	if !strings.HasPrefix(runs[0], "sim mutex op=files threads=1") || !strings.HasPrefix(runs[1], "sim rcu op=files threads=1") ||
		runs[8] != runs[1] || runs[9] != runs[0] {
		t.Errorf("run order %q: want A B A B ..., then B A B A ...", runs)
	}
	if r.MinDuration != 0 || r.WarmUp != time.Millisecond || !r.SinglePinned || !r.Pinned {
		t.Errorf("min duration %v, warm-up %v, single pinned %v, pinned %v: want 0, 1ms, true, true", r.MinDuration, r.WarmUp, r.SinglePinned, r.Pinned)
	}
	for _, c := range r.Cells {
		m := c.Median()
		if len(c.Runs) != 2 || m.PerOp <= 0 || m.Efficiency <= 0 || m.Unexpected != 0 {
			t.Errorf("cell %s %s threads=%d: %+v", c.Row.Label(), c.Op, c.Threads, c.Runs)
		}
		if m.SingleOps != 50 || m.OpsPerWorker != 50 || m.Ops != int64(50*c.Threads) {
			t.Errorf("cell %s %s threads=%d: single ops %d, %v ops per worker, %d in all: want the count alone, 50 per worker",
				c.Row.Label(), c.Op, c.Threads, m.SingleOps, m.OpsPerWorker, m.Ops)
		}
		ratio, ok := r.RatioToBaseline(c)
		if !ok || (c.Row.Target.Lock == "mutex" && ratio != 1) {
			t.Errorf("cell %s: ratio to mutex %v, %v", c.Row.Label(), ratio, ok)
		}
	}
}

// The defaults: a duration and a warm-up unless negative; no duration in
// the cells whose figure is the time to done of a count.
func TestCompareLengthDefaults(t *testing.T) {
	cc := CompareConfig{}.withDefaults()
	if cc.MinDuration != DefaultCompareMinDuration || cc.WarmUp != DefaultCompareWarmUp || cc.Times != DefaultCompareTimes {
		t.Errorf("defaults: min duration %v, warm-up %v, times %d", cc.MinDuration, cc.WarmUp, cc.Times)
	}
	none := CompareConfig{MinDuration: -1, WarmUp: -1}.withDefaults()
	if none.MinDuration != 0 || none.WarmUp != 0 {
		t.Errorf("negative: min duration %v, warm-up %v, want none", none.MinDuration, none.WarmUp)
	}
	for op, want := range map[string]time.Duration{"files": cc.MinDuration, "missing": cc.MinDuration, "coldplug": cc.MinDuration,
		"hwloc": 0, "lstopo": 0} {
		if got := cc.minDuration(&Cell{Op: op}); got != want {
			t.Errorf("op %s: min duration %v, want %v", op, got, want)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	sim := []Row{{targets.Target{Kind: targets.TargetSim, Lock: "rwsem"}}}
	for _, cc := range []CompareConfig{
		{},
		{Rows: sim, Threads: []int{0}},
		{Rows: sim, Ops: []string{"nope"}},
		{Rows: sim, Times: -1},
	} {
		var ce *setting.Error
		if _, err := Compare(context.Background(), cc); !errors.As(err, &ce) {
			t.Errorf("Compare(%+v): got %v, want a *ConfigError", cc, err)
		}
	}
	_, err := Compare(context.Background(), CompareConfig{Rows: []Row{{targets.Target{Kind: targets.TargetKernfsim, Lock: "rcu"}}}})
	if !errors.Is(err, serverproc.ErrNoServer) {
		t.Errorf("kernfsim row without a server: got %v, want ErrNoServer", err)
	}
}

func TestCellMedian(t *testing.T) {
	c := Cell{Runs: []CellRun{{PerOp: 3}, {PerOp: 1}, {PerOp: 2}}}
	if got := c.Median().PerOp; got != 2 {
		t.Errorf("median of 3, 1, 2: got %v, want 2", got)
	}
	c.Runs = append(c.Runs, CellRun{PerOp: 10})
	if got := c.Median().PerOp; got != 2 { // (2+3)/2 truncated to ns
		t.Errorf("median of 1, 2, 3, 10: got %v, want 2", got)
	}
}
