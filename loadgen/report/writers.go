package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// The writers' figures in a comparison's tables, findings and JSON.

// hasWriters reports whether any run of r's cells of op (every op if op
// is "") had writers.
func hasWriters(r loadgen.CompareResult, op string) bool {
	return slices.ContainsFunc(r.Cells, func(c loadgen.Cell) bool {
		return (op == "" || c.Op == op) && slices.ContainsFunc(c.Runs, func(run loadgen.CellRun) bool { return run.Writers > 0 })
	})
}

// writersCellText is c's writer figures: the median and p99 of one
// change, and the changes a second, every writer's; "-" without writers.
func writersCellText(c *loadgen.Cell) string {
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
func writersText(r loadgen.CompareResult) string {
	return fmt.Sprintf("%d per cell beside the readers, %g changes/s each: devices through bus/kernfsim/new_device and delete_device "+
		"(cgroup cells: containers' cgroups through new_cgroup and delete_cgroup; coldplug cells: memory blocks through the probe)",
		r.Writers, r.WriteRate)
}

// writersLine is a finding: the writers' latency per change under each
// lock of kind, at the largest thread count; "" without writers there.
func writersLine(r *loadgen.CompareResult, op string, kind targets.TargetKind) string {
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
	return fmt.Sprintf("%s rows' writers at %d threads, one change's p50/p99: %s", targets.Target{Kind: kind}.Label(), th, strings.Join(parts, ", "))
}

// JSONCellWriters is a run's writer figures (CellRun.Write*).
type JSONCellWriters struct {
	Writers       int     `json:"count"`
	Changes       int64   `json:"changes"`         // over the concur phase, every writer's
	ChangesPerSec float64 `json:"changes_per_sec"` // every writer's
	P50Ns         int64   `json:"p50_ns"`          // of one change, as its writer timed it
	P99Ns         int64   `json:"p99_ns"`
}

// newJSONCellWriters is c's writer figures; nil without writers.
func newJSONCellWriters(c loadgen.CellRun) *JSONCellWriters {
	if c.Writers == 0 {
		return nil
	}
	return &JSONCellWriters{Writers: c.Writers, Changes: c.WriteChanges, ChangesPerSec: c.WriteRate,
		P50Ns: int64(c.WriteP50), P99Ns: int64(c.WriteP99)}
}
