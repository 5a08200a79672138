package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// WriteCompareTable writes one table per op in the spirit of the seed's
// base-versus-patched comparison: a line per row, a column per thread
// count, each cell the median per-op (the concur phase's wall time per
// operation of a worker), its ratio to mutex's ("x1.00") and the scaling
// efficiency ("e1.00" is ideal).
func WriteCompareTable(w io.Writer, r loadgen.CompareResult) error {
	ew := textout.NewWriter(w)
	ew.Printf("loadgen compare: median per-op of %d runs x %s, %d CPUs, %s, %s\n",
		r.Repeats, runLength(r), r.CPUs, PinText(r.SinglePinned, r.Pinned), r.Elapsed.Round(1e8))
	provenance.WriteProvenance(ew, r.Provenance, 8)
	for _, s := range compareSetups(r) {
		ew.Printf("%-8s %s\n", "setup:", s)
	}
	if why := uringFallback(r); why != "" {
		ew.Printf("%-8s kernfsim rows over /dev/fuse, not io_uring: %s\n", "note:", why)
	}
	if r.Writers > 0 {
		ew.Printf("%-8s %s\n", "writers:", writersText(r))
	}
	writeLegend(ew, r)
	if r.Interrupted {
		ew.Printf("interrupted: medians of the runs done so far\n")
	}
	for _, op := range r.Ops {
		ew.Printf("\nop=%s\n", op)
		if loadgen.TimeToDoneOp(op) {
			ew.Printf("cell: median/last time to done per worker (start barrier to its end: an MPI rank's wait for its topology), " +
				"xR on the median\n")
		}
		if ew.Err() != nil {
			return ew.Err()
		}
		if err := writeOpTable(w, r, op); err != nil {
			return err
		}
		if hasLockCounts(r) {
			fmt.Fprintln(w)
			if err := writeLockTable(w, r, op); err != nil {
				return err
			}
		}
		if hasBinding(r, op) {
			fmt.Fprintln(w)
			if err := writeBindTable(w, r, op); err != nil {
				return err
			}
		}
		if hasWriters(r, op) {
			fmt.Fprintln(w)
			if err := writeWritersTable(w, r, op); err != nil {
				return err
			}
		}
	}
	writeFindings(ew, r)
	if n := r.Unexpected(); n > 0 {
		ew.Printf("\nunexpected errors: %d (run the row alone to see them)\n", n)
	}
	writeGroupedWarnings(ew, r)
	if len(r.Notes) > 0 {
		ew.Printf("\nnotes:\n")
	}
	for _, n := range r.Notes {
		ew.Printf("  %s\n", n)
	}
	return ew.Err()
}

// writeLegend says what the cells of the tables mean.
func writeLegend(ew *textout.Writer, r loadgen.CompareResult) {
	ew.Printf("\ncell: per-op ±S  xR eE\n")
	ew.Printf("  ±S  the runs' spread: the farther of min and max from the median, in %% of it\n")
	ew.Printf("  xR  R times mutex's per-op (lower is better); x1.20~ when the two cells' min-max ranges overlap: not resolved\n")
	ew.Printf("  eE  scaling efficiency (1.00 ideal); a ! after it: a run was too short or noisy to trust (see warnings)\n")
	if hasLockCounts(r) {
		ew.Printf("lock use (below each table, the concur phase): rR wW cC%%\n")
		ew.Printf("  rR, wW  the read and write sides' time held over wall time (a shared side: the mean number of holders); cC%% acquisitions that waited\n")
	}
	if hasWriters(r, "") {
		ew.Printf("  wW(N)   where writers ran: N the write side's acquisitions, exact (W's hold times are sampled, and may miss a few writes)\n")
		ew.Printf("writers (below the tables of ops with writers, the concur phase): P50/P99 N/s\n")
		ew.Printf("  P50/P99  the median and p99 of one change (a create or a delete), as its writer timed it; N/s changes made a second, every writer's\n")
	}
}

// simRowsMode says which sim mode the sim rows ran in, and with what
// work outside the lock.
func simRowsMode(r loadgen.CompareResult) string {
	switch r.SimMode() {
	case "bare":
		return "bare (the tree's code alone, no work outside the lock)"
	case "fixed":
		return "fixed (" + describeSimCost(r.SimCosts[r.Ops[0]]) + ")"
	}
	var parts []string
	for _, op := range r.Ops {
		if cost, ok := r.SimCosts[op]; ok {
			parts = append(parts, fmt.Sprintf("%s +%s", op, textout.Dur(cost)))
		}
	}
	c := r.SimCalibrations[0]
	return fmt.Sprintf("calibrated (%s of work outside the lock per op, and the kernel's shared writes: single thread against %s less the sim under %s with those writes)",
		strings.Join(parts, ", "), c.Dir, c.Lock)
}

// workPerRun says how many operations each worker of a run does.
func workPerRun(r loadgen.CompareResult) string {
	cc := loadgen.CompareConfig{Times: r.Times, SimTimes: r.SimTimes, SysTimes: r.SysTimes, HwlocTimes: r.HwlocTimes}
	if !slices.ContainsFunc(r.Ops, func(op string) bool { return !loadgen.TimeToDoneOp(op) }) {
		return fmt.Sprintf("%d discoveries per worker (sim: %d)", r.HwlocTimes, cc.SimHwlocTimes())
	}
	s := fmt.Sprintf("%d ops per worker (sim: %d", r.Times, r.SimTimes)
	if r.SysTimes > 0 && slices.ContainsFunc(r.Rows, func(row loadgen.Row) bool { return row.Target.Kind == targets.TargetPath }) {
		s += fmt.Sprintf(", sys: %d", r.SysTimes)
	}
	if slices.Contains(r.Ops, string(workload.OpColdplug)) {
		s += fmt.Sprintf("; coldplug: a %dth of that", loadgen.ColdplugFiles)
	}
	if slices.Contains(r.Ops, string(workload.OpCgroup)) {
		s += fmt.Sprintf("; cgroup: a %dth of that", loadgen.CgroupFiles)
	}
	if slices.ContainsFunc(r.Ops, loadgen.TimeToDoneOp) {
		s += fmt.Sprintf("; hwloc: %d discoveries, sim: %d", r.HwlocTimes, cc.SimHwlocTimes())
	}
	return s + ")"
}

// writeOpTable writes op's per-op table: a line per row, a column per
// thread count.
func writeOpTable(w io.Writer, r loadgen.CompareResult, op string) error {
	return writeCellTable(w, r, op, "target", true, func(c *loadgen.Cell) string { return cellText(r, c) })
}

// writeLockTable writes op's lock figures, a line per row with a lock.
func writeLockTable(w io.Writer, r loadgen.CompareResult, op string) error {
	return writeCellTable(w, r, op, "lock use", false, lockCellText)
}

// writeWritersTable writes op's writer figures, a line per row with a
// lock (a row that can have writers).
func writeWritersTable(w io.Writer, r loadgen.CompareResult, op string) error {
	return writeCellTable(w, r, op, "writers", false, writersCellText)
}

// writeCellTable writes one of op's tables: a head naming the thread
// counts under corner, then per row (the path rows, lock "host", only if
// paths) its label, lock and cell(c) for each thread count.
func writeCellTable(w io.Writer, r loadgen.CompareResult, op, corner string, paths bool, cell func(*loadgen.Cell) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	head := []string{corner, "lock"}
	for _, th := range r.Threads {
		head = append(head, fmt.Sprintf("threads=%d", th))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for i, row := range r.Rows {
		lock := row.Target.Lock
		if row.Target.Kind == targets.TargetPath {
			if !paths {
				continue
			}
			lock = "host"
		}
		line := []string{row.Target.Label(), lock}
		for _, th := range r.Threads {
			line = append(line, cell(r.Cell(i, op, th)))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	return tw.Flush()
}

func cellText(r loadgen.CompareResult, c *loadgen.Cell) string {
	if c == nil || len(c.Runs) == 0 {
		return "-"
	}
	m, sp := c.Median(), c.Spread()
	fig := textout.Dur(m.PerOp)
	if loadgen.TimeToDoneOp(c.Op) {
		fig = textout.Dur(m.Done) + "/" + textout.Dur(m.DoneMax)
	}
	fig += " ±" + spreadPct(sp)
	if v, ok := r.RatioToBaseline(*c); ok {
		unresolved := ""
		if r.Unresolved(*c) {
			unresolved = "~"
		}
		fig += fmt.Sprintf(" x%.2f%s", v, unresolved)
	}
	fig += fmt.Sprintf(" e%.2f", m.Efficiency)
	if flagged(r, *c) {
		fig += "!"
	}
	return fig
}

// spreadPct is the farther of min and max from the median, in percent of
// the median.
func spreadPct(s loadgen.Spread) string {
	if s.Median == 0 {
		return "0%"
	}
	d := max(s.Max-s.Median, s.Median-s.Min)
	return fmt.Sprintf("%.0f%%", 100*float64(d)/float64(s.Median))
}

// compareSetups says how each kind of row was served, once per kind.
func compareSetups(r loadgen.CompareResult) []string {
	var out []string
	for _, row := range r.Rows {
		s := row.Target.Label() + " rows: " + row.Target.Setup()
		if row.Target.Kind == targets.TargetSim {
			s += " sim=" + simRowsMode(r)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// SchemaCompare names the JSON document WriteCompareJSON writes.
const SchemaCompare = "kernfsim-loadgen-compare/1"

// JSONCompare is the JSON form of a CompareResult.
type JSONCompare struct {
	Schema      string                    `json:"schema"`
	Provenance  provenance.JSONProvenance `json:"provenance"`
	Ops         []string                  `json:"ops"`
	Threads     []int                     `json:"threads"`
	Times       int                       `json:"times"`
	SimTimes    int                       `json:"sim_times"`
	SysTimes    int                       `json:"sys_times,omitempty"`   // per worker in the path rows' plain ops
	HwlocTimes  int                       `json:"hwloc_times,omitempty"` // per worker in hwloc and lstopo cells
	Repeats     int                       `json:"repeats"`
	CPUs        int                       `json:"cpus"`
	Pinned      bool                      `json:"pinned"` // the concur workers
	ElapsedNs   int64                     `json:"elapsed_ns"`
	Interrupted bool                      `json:"interrupted"`
	Notes       []string                  `json:"notes,omitempty"`
	// SinglePinned is CompareResult.SinglePinned: the single worker was
	// pinned. (Documents from before the key pinned it as the concur
	// workers.)
	SinglePinned bool `json:"single_pinned"`
	// MinDurationNs is how long each phase lasted at least (0: times
	// alone decided), WarmUpNs how long each row was warmed up.
	MinDurationNs int64 `json:"min_duration_ns"`
	WarmUpNs      int64 `json:"warm_up_ns"`
	// SimMode is the sim rows' mode: bare, calibrated or fixed
	// (CompareResult.SimMode); SimCostsNs their work outside the lock
	// per op, SimCalibrations how it was calibrated.
	SimMode         string               `json:"sim_mode"`
	SimCostsNs      map[string]int64     `json:"sim_costs_ns,omitempty"`
	SimCalibrations []JSONSimCalibration `json:"sim_calibrations,omitempty"`
	// Writers is how many writers changed the tree beside each cell's
	// readers, WriteRate each one's changes per second asked; absent
	// without writers.
	Writers   int     `json:"writers,omitempty"`
	WriteRate float64 `json:"write_rate,omitempty"`
	// LineTransferNs is the cache-line transfer time measured before the
	// runs, which the bindings price shared read sides at; absent: not
	// measured.
	LineTransferNs int64      `json:"line_transfer_ns,omitempty"`
	Cells          []JSONCell `json:"cells"`
}

// JSONCell is a Cell: its medians, and each run's figures.
type JSONCell struct {
	Target       targets.JSONTarget `json:"target"`
	Op           string             `json:"op"`
	Threads      int                `json:"threads"`
	Median       JSONCellRun        `json:"median"`
	RatioToMutex *float64           `json:"ratio_to_mutex"` // to locking.Baseline; null without its row
	// Unresolved is set when the cell's runs overlap the mutex cell's
	// (min to max): the ratio is not resolved.
	Unresolved bool          `json:"unresolved,omitempty"`
	Spread     JSONSpread    `json:"spread"` // of the headline figure: per_op_ns, or done_ns for hwloc and lstopo
	Runs       []JSONCellRun `json:"runs"`
	// Binding is where the row's design binds by the model, from the
	// median run (CompareResult.Binding); absent without lock counters.
	Binding *JSONBinding `json:"binding,omitempty"`
}

// JSONSpread is a Spread. The confidence interval is null with fewer than
// 6 runs.
type JSONSpread struct {
	MinNs    int64  `json:"min_ns"`
	MedianNs int64  `json:"median_ns"`
	MaxNs    int64  `json:"max_ns"`
	CI95LoNs *int64 `json:"ci95_lo_ns"`
	CI95HiNs *int64 `json:"ci95_hi_ns"`
}

// JSONCellRun is a CellRun.
type JSONCellRun struct {
	Warnings      []string `json:"warnings,omitempty"` // Result.Warnings of the run (of every run, in a median)
	SinglePerOpNs int64    `json:"single_per_op_ns"`
	PerOpNs       int64    `json:"per_op_ns"`        // concur wall per-op
	WorkerPerOpNs int64    `json:"worker_per_op_ns"` // the workers' own per-op
	P50Ns         int64    `json:"p50_ns"`
	P99Ns         int64    `json:"p99_ns"`
	OpsPerSec     float64  `json:"ops_per_sec"`
	Efficiency    float64  `json:"efficiency"`
	Unexpected    int64    `json:"unexpected_errors"`
	DoneNs        int64    `json:"done_ns,omitempty"`     // median of the workers' time to done
	DoneMaxNs     int64    `json:"done_max_ns,omitempty"` // the last worker's
	NsPerOp       float64  `json:"ns_per_op"`             // concur wall over all operations (Go's ns/op)
	Ops           int64    `json:"ops"`                   // the concur phase's operations, every worker's
	P999Ns        int64    `json:"p999_ns"`
	Ratio         float64  `json:"ratio"` // concur/single
	// OpsPerWorker is the concur phase's mean operations per worker and
	// SingleOps the single worker's: times, or more where min_duration_ns
	// extended the phase.
	OpsPerWorker float64 `json:"ops_per_worker"`
	SingleOps    int64   `json:"single_ops"`
	// Lock is how busy the lock was over the concur phase; absent for a
	// target without lock counters (the real /sys).
	Lock *JSONCellLock `json:"lock,omitempty"`
	// Writers is the writers' figures over the concur phase; absent
	// without writers.
	Writers *JSONCellWriters `json:"writers,omitempty"`
}

// JSONCellLock is a run's lock figures (CellRun.Lock*).
type JSONCellLock struct {
	ReadUtilization  float64 `json:"read_utilization"`  // read side held over wall (mean readers inside)
	WriteUtilization float64 `json:"write_utilization"` // write side held over wall
	Contended        float64 `json:"contended"`         // fraction of acquisitions that waited
	// WriteAcquisitions is the write side's acquisitions, exact; absent
	// when nothing wrote.
	WriteAcquisitions int64 `json:"write_acquisitions,omitempty"`
	// ReadUncounted: the strategy's readers take nothing (none), so
	// read_utilization says nothing.
	ReadUncounted bool `json:"read_uncounted,omitempty"`
}

// WriteCompareJSON writes r as one indented JSON document (JSONCompare).
func WriteCompareJSON(w io.Writer, r loadgen.CompareResult) error {
	j := JSONCompare{Schema: SchemaCompare, Provenance: provenance.NewJSONProvenance(r.Provenance), Ops: r.Ops, Threads: r.Threads, Times: r.Times, SimTimes: r.SimTimes, SysTimes: r.SysTimes,
		HwlocTimes: r.HwlocTimes, Repeats: r.Repeats, CPUs: r.CPUs, Pinned: r.Pinned, SinglePinned: r.SinglePinned,
		MinDurationNs: int64(r.MinDuration), WarmUpNs: int64(r.WarmUp), ElapsedNs: int64(r.Elapsed),
		Interrupted: r.Interrupted, Notes: r.Notes, SimMode: r.SimMode(), Writers: r.Writers, WriteRate: r.WriteRate, Cells: []JSONCell{},
		LineTransferNs: int64(r.LineTransfer)}
	for op, cost := range r.SimCosts {
		if j.SimCostsNs == nil {
			j.SimCostsNs = map[string]int64{}
		}
		j.SimCostsNs[op] = cost.Nanoseconds()
	}
	for i := range r.SimCalibrations {
		j.SimCalibrations = append(j.SimCalibrations, *newJSONSimCalibration(&r.SimCalibrations[i]))
	}
	for _, c := range r.Cells {
		jc := JSONCell{Target: targets.NewJSONTarget(r.CellTarget(c)), Op: c.Op, Threads: c.Threads,
			Median: newJSONCellRun(c.Median()), Runs: []JSONCellRun{}}
		if v, ok := r.RatioToBaseline(c); ok {
			jc.RatioToMutex = &v
		}
		jc.Unresolved, jc.Spread = r.Unresolved(c), newJSONSpread(c.Spread())
		jc.Binding = newJSONBinding(r.Binding(c))
		for _, run := range c.Runs {
			jc.Runs = append(jc.Runs, newJSONCellRun(run))
		}
		j.Cells = append(j.Cells, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func newJSONCellRun(c loadgen.CellRun) JSONCellRun {
	j := JSONCellRun{SinglePerOpNs: int64(c.SinglePerOp), PerOpNs: int64(c.PerOp), WorkerPerOpNs: int64(c.WorkerPerOp), P50Ns: int64(c.P50),
		P99Ns: int64(c.P99), OpsPerSec: c.OpsPerSec, Efficiency: c.Efficiency, Unexpected: c.Unexpected,
		DoneNs: int64(c.Done), DoneMaxNs: int64(c.DoneMax), NsPerOp: c.NsPerOp, Ops: c.Ops, P999Ns: int64(c.P999),
		Ratio: c.Ratio, Warnings: c.Warnings, OpsPerWorker: c.OpsPerWorker, SingleOps: c.SingleOps, Writers: newJSONCellWriters(c)}
	if c.LockCounted {
		j.Lock = &JSONCellLock{ReadUtilization: c.LockRead, WriteUtilization: c.LockWrite, Contended: c.LockContended,
			WriteAcquisitions: c.LockWrites, ReadUncounted: c.LockReadUncounted}
	}
	return j
}

func newJSONSpread(s loadgen.Spread) JSONSpread {
	j := JSONSpread{MinNs: int64(s.Min), MedianNs: int64(s.Median), MaxNs: int64(s.Max)}
	if s.CI {
		lo, hi := int64(s.Lo), int64(s.Hi)
		j.CI95LoNs, j.CI95HiNs = &lo, &hi
	}
	return j
}

// WriteCompareBench writes one Go benchmark line per run (each repeat),
// with WriteBench's header and metrics, so that benchstat computes medians
// and confidence intervals itself: `benchstat -col /lock` puts the
// strategies side by side.
func WriteCompareBench(w io.Writer, r loadgen.CompareResult) error {
	gw := provenance.BenchWriter(w, r.Provenance)
	for _, s := range compareSetups(r) {
		gw.Comment("setup: %s", s)
	}
	for _, n := range r.Notes {
		gw.Comment("note: %s", n)
	}
	for _, c := range r.Cells {
		op, missing, _ := loadgen.ParseOpLabel(c.Op)
		name := benchName(r.CellTarget(c), op, missing, c.Threads)
		for _, run := range c.Runs {
			for _, warn := range run.Warnings {
				gw.Comment("warning: %s op=%s threads=%d: %s", c.Row.Label(), c.Op, c.Threads, warn)
			}
			writeBenchLine(gw, r.Provenance, name, op, run)
		}
	}
	return gw.Err()
}

// runLength says what each run of r did, for the table's header: the
// operations per worker (workPerRun) and, where a MinDuration extended
// the phases, "at least" those and how long; then the rows' warm-up.
func runLength(r loadgen.CompareResult) string {
	s := workPerRun(r)
	if r.MinDuration > 0 && slices.ContainsFunc(r.Ops, func(op string) bool { return !loadgen.TimeToDoneOp(op) }) {
		s = "at least " + s + " and " + textout.Dur(r.MinDuration) + " a phase"
		if slices.ContainsFunc(r.Ops, loadgen.TimeToDoneOp) {
			s += " (hwloc and lstopo: the count alone)"
		}
	}
	if r.WarmUp > 0 {
		s += fmt.Sprintf(", each row warmed up %s first", textout.Dur(r.WarmUp))
	}
	return s
}
