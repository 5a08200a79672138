package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCompareSim(t *testing.T) {
	var order []string
	cc := CompareConfig{
		Rows:    []Row{{Target{Kind: TargetSim, Lock: "mutex", Tree: simTree(4)}}, {Target{Kind: TargetSim, Lock: "rcu", Tree: simTree(4)}}},
		Ops:     []string{"files", "missing"},
		Threads: []int{1, 3},
		Times:   20, SimTimes: 50, Repeats: 2,
		Progress: func(p CompareProgress) { order = append(order, p.Next) },
	}
	r, err := Compare(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 2*2*2 || len(order) != 2*len(r.Cells) {
		t.Fatalf("%d cells, %d runs: want 8 cells run twice", len(r.Cells), len(order))
	}
	// Interleaved: rows vary fastest, and the grid repeats whole.
	if !strings.HasPrefix(order[0], "sim mutex op=files threads=1") || !strings.HasPrefix(order[1], "sim rcu op=files threads=1") ||
		order[0] != order[8] {
		t.Errorf("run order %q: want A B A B ..., repeated", order)
	}
	for _, c := range r.Cells {
		m := c.Median()
		if len(c.Runs) != 2 || m.PerOp <= 0 || m.Efficiency <= 0 || m.Unexpected != 0 {
			t.Errorf("cell %s %s threads=%d: %+v", c.Row.Label(), c.Op, c.Threads, c.Runs)
		}
		ratio, ok := r.RatioToMutex(c)
		if !ok || (c.Row.Target.Lock == "mutex" && ratio != 1) {
			t.Errorf("cell %s: ratio to mutex %v, %v", c.Row.Label(), ratio, ok)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	sim := []Row{{Target{Kind: TargetSim, Lock: "rwsem"}}}
	for _, cc := range []CompareConfig{
		{},
		{Rows: sim, Threads: []int{0}},
		{Rows: sim, Ops: []string{"nope"}},
		{Rows: sim, Times: -1},
	} {
		var ce *ConfigError
		if _, err := Compare(context.Background(), cc); !errors.As(err, &ce) {
			t.Errorf("Compare(%+v): got %v, want a *ConfigError", cc, err)
		}
	}
	_, err := Compare(context.Background(), CompareConfig{Rows: []Row{{Target{Kind: TargetKernfsim, Lock: "rcu"}}}})
	if !errors.Is(err, ErrNoServer) {
		t.Errorf("kernfsim row without a server: got %v, want ErrNoServer", err)
	}
}
