package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/reference"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
)

// seedFigure is one pair of seed 002's published figures: the per-op of
// op at threads on a machine of cpus CPUs, before (kernfs_mutex) and
// after (kernfs_rwsem and negative dentries) Ian Kent's series.
type seedFigure struct {
	op           string
	cpus         int
	threads      int           // 1: the benchmark's single line
	mutex, rwsem time.Duration // threads > 1: the mean of the concur lines
}

// seed002 is Ian Kent's figures ("kernfs: proposed locking and
// concurrency improvement", 2021-06-07). They ran Fox Chen's benchmark,
// 10000 operations per thread, as many threads as CPUs. files opens,
// reads and closes cpus/2 distinct files. missing looks up one missing
// path. The base is 5.8.18 (kernfs_mutex), against 5.12.2 with the
// series.
var seed002 = []seedFigure{
	{"files", 16, 1, 3780 * time.Nanosecond, 4435 * time.Nanosecond},
	{"files", 16, 16, 93362 * time.Nanosecond, 21075 * time.Nanosecond},
	{"files", 48, 1, 12283 * time.Nanosecond, 11329 * time.Nanosecond},
	{"files", 48, 48, 578189 * time.Nanosecond, 161002 * time.Nanosecond},
	{"missing", 16, 1, 2387 * time.Nanosecond, 2141 * time.Nanosecond},
	{"missing", 16, 16, 81697 * time.Nanosecond, 23749 * time.Nanosecond},
	{"missing", 48, 1, 8711 * time.Nanosecond, 11500 * time.Nanosecond},
	{"missing", 48, 48, 2139048 * time.Nanosecond, 160549 * time.Nanosecond},
}

// Seed002Reference says where WriteSeedTable's figures come from.
var Seed002Reference = reference.Reference{Seed: "002", Source: "Ian Kent, 2021, Fox Chen's benchmark on 16 and 48 CPUs, base 5.8.18 against 5.12.2 with the kernfs rwsem and negative-dentry series",
	Figure: "files at 16 threads 93.4 us -> 21.1 us, at 48 578 us -> 161 us; missing at 16 81.7 us -> 23.7 us, at 48 2.14 ms -> 161 us"}

// seedVerdict says what a measured ratio of rwsem to mutex shows beside
// the seed's. It "reproduces" where the ratio is resolved and within a
// factor of 1.5 of the seed's. Otherwise it gives the direction, and
// whether the effect is larger or smaller than the seed's.
func seedVerdict(r *loadgen.CompareResult, kind targets.TargetKind, f seedFigure) (cells string, verdict string) {
	mutex, rwsem := rowCell(r, kind, locking.Baseline, f.op, f.threads), rowCell(r, kind, "rwsem", f.op, f.threads)
	if mutex == nil || rwsem == nil {
		return "-", r.FieldNames.Put(notMeasured(r, kind, f.threads))
	}
	v, _ := r.RatioToBaseline(*rwsem)
	mark := ""
	if r.Unresolved(*rwsem) {
		mark = "~"
	}
	cells = fmt.Sprintf("%s %s x%.2f%s", textout.Dur(mutex.Median().PerOp), textout.Dur(rwsem.Median().PerOp), v, mark)
	seed := float64(f.rwsem) / float64(f.mutex)
	switch {
	case f.threads == 1:
		verdict = "one thread: nothing contends"
	case mark != "":
		verdict = "not resolved here"
	case (v < 1) != (seed < 1):
		verdict = "opposite to the seed"
	case v/seed <= 1.5 && seed/v <= 1.5:
		verdict = "reproduces"
	case math.Abs(math.Log(v)) > math.Abs(math.Log(seed)):
		verdict = "same direction, larger"
	default:
		verdict = "same direction, smaller"
	}
	if f.threads > r.CPUs && verdict != "reproduces" && f.threads > 1 {
		verdict += fmt.Sprintf(" (seed: %d CPUs, here %d)", f.cpus, r.CPUs)
	}
	return cells, verdict
}

// notMeasured says why a seed cell has no figures: the run had no rows of
// kind (the kernfsim rows are left out by {TargetSim}), or not the
// thread count or the locks the seed compares.
func notMeasured(r *loadgen.CompareResult, kind targets.TargetKind, threads int) string {
	if !slices.ContainsFunc(r.Rows, func(row loadgen.Row) bool { return row.Target.Kind == kind }) {
		if kind == targets.TargetKernfsim {
			return "not run: {TargetSim} measures the sim rows alone"
		}
		return fmt.Sprintf("not run: this comparison has no %s rows", kind)
	}
	return fmt.Sprintf("not measured (give {Threads} %d and {Locks} mutex,rwsem)", threads)
}

// WriteSeedTable writes, for each op of r that seed 002 measured, the
// seed's figures beside this comparison's at the same thread counts:
// mutex and rwsem per-op and the ratio of rwsem to mutex, for the kernfsim
// and the sim rows, and a verdict for each.
func WriteSeedTable(w io.Writer, r loadgen.CompareResult) error {
	ew := textout.NewWriter(w)
	ew.Printf("\n%s\n", Seed002Reference)
	ew.Printf("beside this run (%d CPUs); each cell: mutex rwsem x(rwsem/mutex), ~ not resolved:\n", r.CPUs)
	if ew.Err() != nil {
		return ew.Err()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "op\tthreads\tseed (CPUs)\tkernfsim\t\tsim\t")
	any := false
	for _, f := range seed002 {
		if !slices.Contains(r.Ops, f.op) {
			continue
		}
		any = true
		seed := fmt.Sprintf("%s %s x%.2f (%d)", textout.Dur(f.mutex), textout.Dur(f.rwsem), float64(f.rwsem)/float64(f.mutex), f.cpus)
		line := []string{f.op, fmt.Sprint(f.threads), seed}
		for _, kind := range []targets.TargetKind{targets.TargetKernfsim, targets.TargetSim} {
			cells, verdict := seedVerdict(&r, kind, f)
			line = append(line, cells, verdict)
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if !any {
		fmt.Fprintln(tw, r.FieldNames.Put("(none of this run's ops: seed 002 measured {Ops} files,missing)"))
	}
	return tw.Flush()
}
