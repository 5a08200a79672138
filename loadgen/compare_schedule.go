package loadgen

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// The schedule of a comparison: in which order its runs go, what each
// one is and how long it lasts, and the warm-up before them.

// orDefault is d, or def for 0, or 0 for a negative d (none).
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// runGrid warms the rows up, then runs the cells in interleaved order:
// repeat by repeat, thread count by thread count, op by op, the rows in
// RowOrder.
func runGrid(ctx context.Context, cc CompareConfig, res *CompareResult, t0 time.Time) error {
	if err := warmUpRows(ctx, cc, res, t0); err != nil {
		return err
	}
	total, done := cc.Repeats*len(res.Cells), 0
	for rep := range cc.Repeats {
		for _, th := range res.Threads {
			for _, op := range res.Ops {
				for _, i := range RowOrder(rep, len(res.Rows)) {
					c := res.Cell(i, op, th)
					if cc.Progress != nil {
						cc.Progress(CompareProgress{Done: done, Total: total, Elapsed: time.Since(t0),
							Next: fmt.Sprintf("%s op=%s threads=%d", c.Row.Label(), op, th)})
					}
					if err := runCell(ctx, cc, c, res); err != nil {
						return err
					}
					done++
				}
			}
		}
	}
	return nil
}

// RowOrder is the order of the rows (their indices) in repeat rep of a
// comparison of n rows. The rows go forward in even repeats and backward
// in odd ones (A B C, C B A). Over each pair of repeats every row sits at
// the same mean position, so a drift of the machine cancels out. The
// order also rotates by one every two repeats (B C A, A C B, ...). So no
// row always runs first, nor always right after the same neighbour.
func RowOrder(rep, n int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = (k + rep/2) % n
	}
	if rep%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// warmUpRows runs each row once, untimed, for cc.WarmUp a phase on one
// thread: the first timed run of a FUSE row is otherwise its server's
// first load, and the comparison's first run this process's.
func warmUpRows(ctx context.Context, cc CompareConfig, res *CompareResult, t0 time.Time) error {
	if cc.WarmUp <= 0 {
		return nil
	}
	for _, row := range res.Rows {
		if cc.Progress != nil {
			cc.Progress(CompareProgress{Total: cc.Repeats * len(res.Cells), Elapsed: time.Since(t0), Next: row.Label() + " warm-up"})
		}
		_, err := Run(ctx, Config{Target: row.Target, Threads: 1, Times: 1, MinDuration: cc.WarmUp,
			NoPin: cc.NoPin, PinSingle: cc.PinSingle})
		if err != nil {
			return fmt.Errorf("%s warm-up: %w", row.Label(), err)
		}
	}
	return nil
}

// runCell runs c once, adding the run's notes to res's. A sim row cannot
// run lstopo (it needs a filesystem), nor a sys row cgroup on a host
// without cgroup v2: the cell stays empty, with a note.
func runCell(ctx context.Context, cc CompareConfig, c *Cell, res *CompareResult) error {
	op, missing, _ := ParseOpLabel(c.Op)
	if op == workload.OpLstopo && c.Row.Target.Kind == targets.TargetSim {
		res.note(c.Row.Label() + ": lstopo needs a filesystem, skipped")
		return nil
	}
	if dir := c.Row.Target.Dir; op == workload.OpCgroup && c.Row.Target.Kind == targets.TargetPath && !cgroupV2(dir) {
		res.note(c.Row.Label() + ": cgroup skipped: no cgroup v2 hierarchy at " + filepath.Join(dir, cgroupDir) + " (a cgroup v1 or hybrid host)")
		return nil
	}
	t := res.CellTarget(*c)
	cfg := Config{Target: t, Op: op, Missing: missing, Threads: c.Threads,
		Times: cc.times(c), MinDuration: cc.minDuration(c), NoPin: cc.NoPin, PinSingle: cc.PinSingle, NoChurnReads: true,
		FieldNames: cc.FieldNames}
	if n, note := res.writersFor(c.Row); n > 0 {
		cfg.Writers, cfg.Churn = n, res.WriteRate
	} else if note != "" {
		res.note(c.Row.Label() + ": " + note)
	}
	r, err := Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%s op=%s threads=%d: %w", c.Row.Label(), c.Op, c.Threads, err)
	}
	for _, n := range r.Notes {
		res.note(c.Row.Label() + ": " + n)
	}
	c.Runs = append(c.Runs, CellRunOf(r))
	return nil
}

// times is the operations per worker of c's runs. A coldplug operation
// is ColdplugFiles lookups, a cgroup one CgroupFiles reads, so their
// cells do that many times fewer, and cost what a files cell does. Sim
// rows do SimTimes/Times times more discoveries than HwlocTimes: one in
// process takes less than a scheduler tick. Path rows do SysTimes of a
// plain op.
func (cc CompareConfig) times(c *Cell) int {
	sim := c.Row.Target.Kind == targets.TargetSim
	switch {
	case TimeToDoneOp(c.Op) && sim:
		return cc.SimHwlocTimes()
	case TimeToDoneOp(c.Op):
		return cc.HwlocTimes
	case c.Op == string(workload.OpColdplug) && sim:
		return max(1, cc.SimTimes/ColdplugFiles)
	case c.Op == string(workload.OpColdplug):
		return max(1, cc.Times/ColdplugFiles)
	case c.Op == string(workload.OpCgroup) && sim:
		return max(1, cc.SimTimes/CgroupFiles)
	case c.Op == string(workload.OpCgroup):
		return max(1, cc.Times/CgroupFiles)
	case sim:
		return cc.SimTimes
	case c.Row.Target.Kind == targets.TargetPath:
		return cc.SysTimes
	}
	return cc.Times
}

// SimHwlocTimes is the discoveries per worker of hwloc cells of sim rows.
func (cc CompareConfig) SimHwlocTimes() int { return cc.HwlocTimes * max(1, cc.SimTimes/cc.Times) }

// minDuration is the least duration of each phase of c's runs: none for
// hwloc and lstopo, whose figure is the time to done of a count of
// discoveries.
func (cc CompareConfig) minDuration(c *Cell) time.Duration {
	if TimeToDoneOp(c.Op) {
		return 0
	}
	return cc.MinDuration
}
