package loadgen

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/internal/textout"
)

// Writers in a comparison (CompareConfig.Writers): a lock whose cost is
// on the writer's side (a percpu-rwsem's grace period per write, BRAVO's
// revocation, rcu's copy and wait) looks free while nothing writes. With
// writers, each cell's runs change the tree beside the readers, the
// writers time their own changes, and the tables get a third one per op:
// the writers' latency per change beside the lock-use table.

// writersFor is how many writers the cells of row run, and a note if the
// row cannot have the writers asked for: the sys rows (loadgen never
// writes to a real sysfs) and a lock that refuses writers run readers
// only.
func (r *CompareResult) writersFor(row Row) (int, string) {
	switch t := row.Target; {
	case r.Writers == 0:
		return 0, ""
	case t.Kind == TargetPath:
		return 0, "no writers: loadgen never writes to a real sysfs; readers only"
	case !LockTraits(t.Lock).AcceptsWriters:
		return 0, "no writers: lock strategy " + t.Lock + " refuses them; readers only"
	}
	return r.Writers, ""
}

// medianWriters sets m's writer figures to the medians of c's runs that
// had writers.
func (c Cell) medianWriters(m *CellRun) {
	var runs []CellRun
	for _, r := range c.Runs {
		if r.Writers > 0 {
			runs = append(runs, r)
			m.Writers = max(m.Writers, r.Writers)
		}
	}
	if len(runs) == 0 {
		return
	}
	w := Cell{Runs: runs}
	med := func(f func(CellRun) float64) float64 { return median(w.values(f)) }
	m.WriteChanges = int64(med(func(r CellRun) float64 { return float64(r.WriteChanges) }))
	m.WriteRate = med(func(r CellRun) float64 { return r.WriteRate })
	m.WriteP50 = time.Duration(med(func(r CellRun) float64 { return float64(r.WriteP50) }))
	m.WriteP99 = time.Duration(med(func(r CellRun) float64 { return float64(r.WriteP99) }))
}

// hasWriters reports whether any run of r's cells of op (every op if op
// is "") had writers.
func hasWriters(r CompareResult, op string) bool {
	return slices.ContainsFunc(r.Cells, func(c Cell) bool {
		return (op == "" || c.Op == op) && slices.ContainsFunc(c.Runs, func(run CellRun) bool { return run.Writers > 0 })
	})
}

// writersCellText is c's writer figures: the median and p99 of one
// change, and the changes a second, every writer's; "-" without writers.
func writersCellText(c *Cell) string {
	if c == nil || len(c.Runs) == 0 {
		return "-"
	}
	m := c.Median()
	if m.Writers == 0 {
		return "-"
	}
	return fmt.Sprintf("%s/%s %.0f/s", textout.Dur(m.WriteP50), textout.Dur(m.WriteP99), m.WriteRate)
}

// writersText says what the writers of r do, for the table's header.
func writersText(r CompareResult) string {
	return fmt.Sprintf("%d per cell beside the readers, %g changes/s each: devices through bus/kernfsim/new_device and delete_device "+
		"(cgroup cells: containers' cgroups through new_cgroup and delete_cgroup; coldplug cells: memory blocks through the probe)",
		r.Writers, r.WriteRate)
}

// writersLine is a finding: the writers' latency per change under each
// lock of kind, at the largest thread count; "" without writers there.
func (r *CompareResult) writersLine(op string, kind TargetKind) string {
	if len(r.Threads) == 0 {
		return ""
	}
	th := slices.Max(r.Threads)
	var parts []string
	for i, row := range r.Rows {
		if c := r.Cell(i, op, th); row.Target.Kind == kind && c != nil && len(c.Runs) > 0 {
			if m := c.Median(); m.Writers > 0 {
				parts = append(parts, fmt.Sprintf("%s %s/%s", row.Target.Lock, textout.Dur(m.WriteP50), textout.Dur(m.WriteP99)))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s rows' writers at %d threads, one change's p50/p99: %s", TargetLabel(Target{Kind: kind}), th, strings.Join(parts, ", "))
}

// JSONCellWriters is a run's writer figures (CellRun.Write*).
type JSONCellWriters struct {
	Writers       int     `json:"count"`
	Changes       int64   `json:"changes"`         // over the concur phase, every writer's
	ChangesPerSec float64 `json:"changes_per_sec"` // every writer's
	P50Ns         int64   `json:"p50_ns"`          // of one change, as its writer timed it
	P99Ns         int64   `json:"p99_ns"`
}

// jsonCellWriters is c's writer figures; nil without writers.
func jsonCellWriters(c CellRun) *JSONCellWriters {
	if c.Writers == 0 {
		return nil
	}
	return &JSONCellWriters{Writers: c.Writers, Changes: c.WriteChanges, ChangesPerSec: c.WriteRate,
		P50Ns: int64(c.WriteP50), P99Ns: int64(c.WriteP99)}
}
