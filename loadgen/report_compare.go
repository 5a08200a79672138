package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteCompareTable writes one table per op in the spirit of the seed's
// base-versus-patched comparison: a line per row, a column per thread
// count, each cell the median per-op (the concur phase's wall time per
// operation of a worker), its ratio to mutex's (x1.00) and the scaling
// efficiency (e1.00 ideal).
func WriteCompareTable(w io.Writer, r CompareResult) error {
	ew := &errWriter{w: w}
	pin := "pinned"
	if !r.Pinned {
		pin = "not pinned"
	}
	ew.printf("loadgen compare: median per-op of %d runs x %s, %d CPUs, workers %s, %s\n",
		r.Repeats, workPerRun(r), r.CPUs, pin, r.Elapsed.Round(1e8))
	ew.printf("cell: per-op  xR = R times mutex's per-op (lower is better)  eE = scaling efficiency (1.00 ideal)\n")
	if r.Interrupted {
		ew.printf("interrupted: medians of the runs done so far\n")
	}
	for _, op := range r.Ops {
		ew.printf("\nop=%s\n", op)
		if fieldOp(op) {
			ew.printf("cell: median/last time to done per worker (start barrier to its end: an MPI rank's wait for its topology), " +
				"xR on the median\n")
		}
		if ew.err != nil {
			return ew.err
		}
		if err := writeOpTable(w, r, op); err != nil {
			return err
		}
	}
	if n := r.Unexpected(); n > 0 {
		ew.printf("\nunexpected errors: %d (run the row alone to see them)\n", n)
	}
	if len(r.Notes) > 0 {
		ew.printf("\nnotes:\n")
	}
	for _, n := range r.Notes {
		ew.printf("  %s\n", n)
	}
	return ew.err
}

// workPerRun says how many operations each worker of a run does.
func workPerRun(r CompareResult) string {
	cc := CompareConfig{Times: r.Times, SimTimes: r.SimTimes, HwlocTimes: r.HwlocTimes}
	if !slices.ContainsFunc(r.Ops, func(op string) bool { return !fieldOp(op) }) {
		return fmt.Sprintf("%d discoveries per worker (sim: %d)", r.HwlocTimes, cc.simHwlocTimes())
	}
	s := fmt.Sprintf("%d ops per worker (sim: %d", r.Times, r.SimTimes)
	if slices.Contains(r.Ops, string(OpColdplug)) {
		s += fmt.Sprintf("; coldplug: a %dth of that", coldplugFiles)
	}
	if slices.ContainsFunc(r.Ops, fieldOp) {
		s += fmt.Sprintf("; hwloc: %d discoveries, sim: %d", r.HwlocTimes, cc.simHwlocTimes())
	}
	return s + ")"
}

func writeOpTable(w io.Writer, r CompareResult, op string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	head := []string{"target", "lock"}
	for _, th := range r.Threads {
		head = append(head, fmt.Sprintf("threads=%d", th))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for i, row := range r.Rows {
		lock := row.Target.Lock
		if row.Target.Kind == TargetPath {
			lock = "host"
		}
		line := []string{targetLabel(row.Target), lock}
		for _, th := range r.Threads {
			line = append(line, cellText(r, r.Cell(i, op, th)))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	return tw.Flush()
}

func cellText(r CompareResult, c *Cell) string {
	if c == nil || len(c.Runs) == 0 {
		return "-"
	}
	m := c.Median()
	fig := fmtDur(m.PerOp)
	if fieldOp(c.Op) {
		fig = fmtDur(m.Done) + "/" + fmtDur(m.DoneMax)
	}
	if v, ok := r.RatioToMutex(*c); ok {
		return fmt.Sprintf("%s x%.2f e%.2f", fig, v, m.Efficiency)
	}
	return fmt.Sprintf("%s e%.2f", fig, m.Efficiency)
}

// SchemaCompare names the JSON document WriteCompareJSON writes.
const SchemaCompare = "kernfsim-loadgen-compare/1"

// JSONCompare is the JSON form of a CompareResult.
type JSONCompare struct {
	Schema      string     `json:"schema"`
	Ops         []string   `json:"ops"`
	Threads     []int      `json:"threads"`
	Times       int        `json:"times"`
	SimTimes    int        `json:"sim_times"`
	HwlocTimes  int        `json:"hwloc_times,omitempty"` // per worker in hwloc and lstopo cells
	Repeats     int        `json:"repeats"`
	CPUs        int        `json:"cpus"`
	Pinned      bool       `json:"pinned"`
	ElapsedNs   int64      `json:"elapsed_ns"`
	Interrupted bool       `json:"interrupted"`
	Notes       []string   `json:"notes,omitempty"`
	Cells       []JSONCell `json:"cells"`
}

// JSONCell is a Cell: its medians, and each run's figures.
type JSONCell struct {
	Target       JSONTarget    `json:"target"`
	Op           string        `json:"op"`
	Threads      int           `json:"threads"`
	Median       JSONCellRun   `json:"median"`
	RatioToMutex *float64      `json:"ratio_to_mutex"` // null without a mutex row
	Runs         []JSONCellRun `json:"runs"`
}

// JSONCellRun is a CellRun.
type JSONCellRun struct {
	SinglePerOpNs int64   `json:"single_per_op_ns"`
	PerOpNs       int64   `json:"per_op_ns"`        // concur wall per-op
	WorkerPerOpNs int64   `json:"worker_per_op_ns"` // the workers' own per-op
	P50Ns         int64   `json:"p50_ns"`
	P99Ns         int64   `json:"p99_ns"`
	OpsPerSec     float64 `json:"ops_per_sec"`
	Efficiency    float64 `json:"efficiency"`
	Unexpected    int64   `json:"unexpected_errors"`
	DoneNs        int64   `json:"done_ns,omitempty"`     // median of the workers' time to done
	DoneMaxNs     int64   `json:"done_max_ns,omitempty"` // the last worker's
}

// WriteCompareJSON writes r as one indented JSON document (JSONCompare).
func WriteCompareJSON(w io.Writer, r CompareResult) error {
	j := JSONCompare{Schema: SchemaCompare, Ops: r.Ops, Threads: r.Threads, Times: r.Times, SimTimes: r.SimTimes,
		HwlocTimes: r.HwlocTimes, Repeats: r.Repeats, CPUs: r.CPUs, Pinned: r.Pinned, ElapsedNs: int64(r.Elapsed),
		Interrupted: r.Interrupted, Notes: r.Notes, Cells: []JSONCell{}}
	for _, c := range r.Cells {
		jc := JSONCell{Target: jsonTarget(c.Row.Target), Op: c.Op, Threads: c.Threads,
			Median: jsonCellRun(c.Median()), Runs: []JSONCellRun{}}
		if v, ok := r.RatioToMutex(c); ok {
			jc.RatioToMutex = &v
		}
		for _, run := range c.Runs {
			jc.Runs = append(jc.Runs, jsonCellRun(run))
		}
		j.Cells = append(j.Cells, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func jsonCellRun(c CellRun) JSONCellRun {
	return JSONCellRun{SinglePerOpNs: int64(c.SinglePerOp), PerOpNs: int64(c.PerOp), WorkerPerOpNs: int64(c.WorkerPerOp), P50Ns: int64(c.P50),
		P99Ns: int64(c.P99), OpsPerSec: c.OpsPerSec, Efficiency: c.Efficiency, Unexpected: c.Unexpected,
		DoneNs: int64(c.Done), DoneMaxNs: int64(c.DoneMax)}
}

// WriteCompareBench writes one Go benchmark line per run (each repeat), so
// that benchstat computes medians and confidence intervals itself:
// `benchstat -col /lock` puts the strategies side by side.
func WriteCompareBench(w io.Writer, r CompareResult) error {
	if err := writeBenchHeader(w); err != nil {
		return err
	}
	for _, c := range r.Cells {
		op, missing, _ := parseOpLabel(c.Op)
		name := benchName(c.Row.Target, Result{Op: op, Missing: missing, Threads: c.Threads})
		times := CompareConfig{Times: r.Times, SimTimes: r.SimTimes, HwlocTimes: r.HwlocTimes}.times(&c)
		for _, run := range c.Runs {
			done := ""
			if fieldOp(c.Op) {
				done = fmt.Sprintf("\t%d done-ns\t%d done-max-ns", int64(run.Done), int64(run.DoneMax))
			}
			if _, err := fmt.Fprintf(w, "%s\t%d\t%.1f ns/op\t%.1f worker-ns/op\t%.1f single-ns/op\t%d p50-ns\t%d p99-ns\t%.0f ops/s\t%.3f efficiency%s\n",
				name, times, float64(run.PerOp), float64(run.WorkerPerOp), float64(run.SinglePerOp), int64(run.P50), int64(run.P99),
				run.OpsPerSec, run.Efficiency, done); err != nil {
				return err
			}
		}
	}
	return nil
}
