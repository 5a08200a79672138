package loadgen

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kernfsim/kernfsim/internal/textout"
)

// The schedule of a comparison: in which order its runs go, how long
// each lasts, and the warm-up before them.

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
// comparison of n rows: forward in even repeats and backward in odd ones
// (A B C, C B A: over each pair of repeats every row sits at the same
// mean position, so a drift of the machine cancels out), and rotated by
// one every two repeats (B C A, A C B, ...), so that no row always runs
// first, nor always right after the same neighbour.
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

// minDuration is the least duration of each phase of c's runs: none for
// hwloc and lstopo, whose figure is the time to done of a count of
// discoveries.
func (cc CompareConfig) minDuration(c *Cell) time.Duration {
	if fieldOp(c.Op) {
		return 0
	}
	return cc.MinDuration
}

// runLength says what each run of r did, for the table's header: the
// operations per worker (workPerRun) and, where a MinDuration extended
// the phases, "at least" those and how long; then the rows' warm-up.
func runLength(r CompareResult) string {
	s := workPerRun(r)
	if r.MinDuration > 0 && slices.ContainsFunc(r.Ops, func(op string) bool { return !fieldOp(op) }) {
		s = "at least " + s + " and " + textout.Dur(r.MinDuration) + " a phase"
		if slices.ContainsFunc(r.Ops, fieldOp) {
			s += " (hwloc and lstopo: the count alone)"
		}
	}
	if r.WarmUp > 0 {
		s += fmt.Sprintf(", each row warmed up %s first", textout.Dur(r.WarmUp))
	}
	return s
}
