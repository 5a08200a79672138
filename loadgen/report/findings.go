package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
)

// A comparison's findings say what its tables show, in a few lines per
// op, as a patch cover letter would. WriteCompareTable prints them after
// the tables. For each target kind with a baseline row (locking.Baseline),
// they give:
//
//   - each other lock's ratio to the baseline where the runs' ranges do not
//     overlap (resolved), and the thread counts where they do (within
//     noise);
//   - for the FUSE rows, what bounds them: the tree's own code (the sim
//     row at one thread) against the whole per-op, and how busy the lock
//     was;
//   - with writers, how long one change took under each lock.

// Findings are the summary lines of op: a line per lock of each kind.
func Findings(r *loadgen.CompareResult, op string) []string {
	var out []string
	for _, kind := range []targets.TargetKind{targets.TargetKernfsim, targets.TargetSim} {
		out = append(out, kindFindings(r, op, kind)...)
	}
	if line := bindLine(r, op); line != "" {
		out = append(out, line)
	}
	return out
}

// kindFindings are op's findings for the rows of kind.
func kindFindings(r *loadgen.CompareResult, op string, kind targets.TargetKind) []string {
	var lines []string
	anyResolved, rows := false, 0
	for i, row := range r.Rows {
		if row.Target.Kind != kind || row.Target.Lock == locking.Baseline {
			continue
		}
		var resolved, noise []string
		for _, th := range r.Threads {
			c := r.Cell(i, op, th)
			if c == nil || len(c.Runs) == 0 {
				continue
			}
			v, ok := r.RatioToBaseline(*c)
			switch {
			case !ok:
				continue
			case r.Unresolved(*c):
				noise = append(noise, fmt.Sprint(th))
			default:
				resolved = append(resolved, fmt.Sprintf("x%.2f at %d", v, th))
			}
		}
		if len(resolved) == 0 && len(noise) == 0 {
			continue
		}
		rows++
		anyResolved = anyResolved || len(resolved) > 0
		var parts []string
		if len(resolved) > 0 {
			parts = append(parts, strings.Join(resolved, ", ")+" threads")
		}
		if len(noise) > 0 {
			parts = append(parts, "within noise at "+strings.Join(noise, ", "))
		}
		lines = append(lines, fmt.Sprintf("%s against mutex: %s", row.Label(), strings.Join(parts, "; ")))
	}
	if rows > 0 && !anyResolved {
		lines = []string{fmt.Sprintf("%s: no lock differs from mutex beyond the runs' spread, at any thread count", targets.Target{Kind: kind}.Label())}
	}
	if kind == targets.TargetKernfsim && rows > 0 {
		lines = append(lines, mountBound(r, op)...)
	}
	if line := writersLine(r, op, kind); line != "" {
		lines = append(lines, line)
	}
	return lines
}

// mountBound says what bounds the kernfsim rows of op: the share of a
// one-thread per-op that the tree's own code takes (the sim mutex row's
// single per-op), and the lock's busy fraction where it was measured.
func mountBound(r *loadgen.CompareResult, op string) []string {
	mount, sim := rowCell(r, targets.TargetKernfsim, locking.Baseline, op, 1), rowCell(r, targets.TargetSim, locking.Baseline, op, 1)
	var out []string
	if mount != nil && sim != nil && mount.Median().SinglePerOp > 0 {
		ms, ss := mount.Median().SinglePerOp, sim.Median().SinglePerOp
		out = append(out, fmt.Sprintf("kernfsim rows: the tree's own code (sim mutex, %s) is %.1f%% of a one-thread per-op on the mount (%s); the rest is the FUSE transport and the kernel's walk, the same under every lock",
			textout.Dur(ss), 100*float64(ss)/float64(ms), textout.Dur(ms)))
	}
	if line := lockBusyLine(r, op); line != "" {
		out = append(out, line)
	}
	return out
}

// rowCell is the cell of the first row of kind under lock, or nil.
func rowCell(r *loadgen.CompareResult, kind targets.TargetKind, lock, op string, threads int) *loadgen.Cell {
	i := slices.IndexFunc(r.Rows, func(row loadgen.Row) bool { return row.Target.Kind == kind && row.Target.Lock == lock })
	if i < 0 {
		return nil
	}
	if c := r.Cell(i, op, threads); c != nil && len(c.Runs) > 0 {
		return c
	}
	return nil
}

// lockBusyLine says how busy the kernfsim rows' locks were at the
// largest thread count, and whether the lock can be what bounds them:
// not where the baseline (locking.Baseline), whose read side excludes,
// was held for under half the phase.
func lockBusyLine(r *loadgen.CompareResult, op string) string {
	if len(r.Threads) == 0 {
		return ""
	}
	th := slices.Max(r.Threads)
	var parts []string
	baseBusy := -1.0
	for i, row := range r.Rows {
		if row.Target.Kind != targets.TargetKernfsim {
			continue
		}
		c := r.Cell(i, op, th)
		if c == nil || len(c.Runs) == 0 {
			continue
		}
		m := c.Median()
		if !m.LockCounted {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s w%.3f", row.Target.Lock, readUse(m), m.LockWrite))
		if row.Target.Lock == locking.Baseline && baseBusy < 0 {
			baseBusy = m.LockRead + m.LockWrite
		}
	}
	if len(parts) == 0 {
		return ""
	}
	s := fmt.Sprintf("kernfsim rows at %d threads, the lock held over the wall time (r read side, mean holders where shared; w write side): %s",
		th, strings.Join(parts, ", "))
	switch {
	case baseBusy >= 0.5:
		s += fmt.Sprintf("; %s was busy %.0f%% of the time: the lock bounds these rows", locking.Baseline, 100*baseBusy)
	case baseBusy >= 0:
		s += fmt.Sprintf("; %s was busy %.0f%% of the time: the lock is not what bounds these rows, the transport is", locking.Baseline, 100*baseBusy)
	}
	return s
}

// lockCellText is c's lock figures: each side's utilization (where
// writers ran, the write side's acquisitions after it) and the fraction
// of acquisitions that waited; "-" without counters.
func lockCellText(c *loadgen.Cell) string {
	if c == nil || len(c.Runs) == 0 {
		return "-"
	}
	m := c.Median()
	if !m.LockCounted {
		return "-"
	}
	writes := ""
	if m.Writers > 0 {
		writes = fmt.Sprintf("(%d)", m.LockWrites)
	}
	return fmt.Sprintf("%s w%.3f%s c%.1f%%", readUse(m), m.LockWrite, writes, 100*m.LockContended)
}

// readUse is m's read side's utilization, rR, or r- where its readers
// take nothing (none).
func readUse(m loadgen.CellRun) string {
	if m.LockReadUncounted {
		return "r-"
	}
	return fmt.Sprintf("r%.3f", m.LockRead)
}

// A run's warnings are grouped by kind: one line per kind, naming the
// cells it came in. An efficiency above MaxEfficiency on a FUSE row is
// explained instead: over FUSE a lone client waits at every request for
// the server's thread to wake on an idle vCPU, while concurrent clients
// keep the CPUs awake, so the single per-op that efficiency divides by is
// inflated. That is the transport, not a short or noisy run, and more
// operations would not change it.

// warnKind is a kind of run warning.
type warnKind int

const (
	warnShort      warnKind = iota // a worker loop under MinWorkerLoop
	warnEfficiency                 // efficiency above MaxEfficiency
	warnKinds
)

// kindOf is the kind of the warning w (Result.Warnings).
func kindOf(w string) warnKind {
	if strings.HasPrefix(w, "efficiency") {
		return warnEfficiency
	}
	return warnShort
}

// why is what explains a warning: how its cell was measured, not a fault
// of its runs.
type why int

const (
	unexplained  why = iota
	whyTransport     // efficiency above 1 on a FUSE row
	whyUnpinned      // efficiency above 1 at one thread, the single worker unpinned and the one concurrent worker pinned
)

// explanation is what each why says, in the explained list.
var explanation = map[why]string{
	whyTransport: "on the FUSE rows: a lone client waits at every request for the server's thread to wake on an idle vCPU, " +
		"while concurrent clients keep the CPUs awake, so the single per-op that efficiency divides by is inflated (the transport, not noise: more runs would not change it)",
	whyUnpinned: "at one thread: the single worker runs unpinned, as the seed's did, and the scheduler moves it between CPUs, " +
		"while the one concurrent worker is pinned; {PinSingle} pins both",
}

// explained is why a warning of kind k in c of r is explained, or
// unexplained.
func explained(r loadgen.CompareResult, c loadgen.Cell, k warnKind) why {
	switch {
	case k != warnEfficiency:
		return unexplained
	case c.Row.Target.Kind == targets.TargetKernfsim:
		return whyTransport
	case c.Threads == 1 && r.Pinned && !r.SinglePinned:
		return whyUnpinned
	}
	return unexplained
}

// flagged reports whether a run of c has a warning that is not explained:
// the cell's figure may mislead (the ! in tables).
func flagged(r loadgen.CompareResult, c loadgen.Cell) bool {
	for _, run := range c.Runs {
		for _, w := range run.Warnings {
			if explained(r, c, kindOf(w)) == unexplained {
				return true
			}
		}
	}
	return false
}

// warnedCells lists the cells of r where a warning of kind k came that
// reason explains (or does not): "sim rcu files threads=8 (1/3)".
func warnedCells(r loadgen.CompareResult, k warnKind, reason why) []string {
	var out []string
	for _, c := range r.Cells {
		if explained(r, c, k) != reason {
			continue
		}
		n := 0
		for _, run := range c.Runs {
			if slices.ContainsFunc(run.Warnings, func(w string) bool { return kindOf(w) == k }) {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s %s threads=%d (%d/%d)", c.Row.Label(), c.Op, c.Threads, n, len(c.Runs)))
		}
	}
	return out
}

// writeGroupedWarnings writes a line per kind of warning with the cells
// it affects, then what is explained.
func writeGroupedWarnings(ew *textout.Writer, r loadgen.CompareResult) {
	what := [warnKinds]string{
		warnShort:      fmt.Sprintf("worker loops under %s (raise {Times}, or {SimTimes} for the sim rows)", textout.Dur(loadgen.MinWorkerLoop)),
		warnEfficiency: fmt.Sprintf("efficiency above %.2f (raise {Repeats}; {Times}, or {SimTimes} for the sim rows)", loadgen.MaxEfficiency),
	}
	first := true
	for k := range warnKinds {
		cells := warnedCells(r, k, unexplained)
		if len(cells) == 0 {
			continue
		}
		if first {
			ew.Printf("\nwarnings (runs that may mislead, the cells marked !; each run's own in %s json):\n", r.FieldNames.Name("Format"))
			first = false
		}
		ew.Printf("  %s: %s\n", r.FieldNames.Put(what[k]), strings.Join(cells, ", "))
	}
	first = true
	for _, reason := range []why{whyTransport, whyUnpinned} {
		cells := warnedCells(r, warnEfficiency, reason)
		if len(cells) == 0 {
			continue
		}
		if first {
			ew.Printf("\nexplained, not faults:\n")
			first = false
		}
		ew.Printf("  efficiency above %.2f %s; %d cells\n", loadgen.MaxEfficiency, r.FieldNames.Put(explanation[reason]), len(cells))
	}
}

// writeFindings writes the summary: op's findings, per op.
func writeFindings(ew *textout.Writer, r loadgen.CompareResult) {
	first := true
	for _, op := range r.Ops {
		lines := Findings(&r, op)
		if len(lines) == 0 {
			continue
		}
		if first {
			ew.Printf("\nsummary (resolved: the runs' min-max ranges do not overlap mutex's):\n")
			first = false
		}
		ew.Printf("  op=%s\n", op)
		for _, l := range lines {
			ew.Printf("    %s\n", l)
		}
	}
}

// hasLockCounts reports whether any run of r measured its lock.
func hasLockCounts(r loadgen.CompareResult) bool {
	return slices.ContainsFunc(r.Cells, func(c loadgen.Cell) bool {
		return slices.ContainsFunc(c.Runs, func(run loadgen.CellRun) bool { return run.LockCounted })
	})
}

// uringFallback is why the kernfsim rows whose server chose its transport
// serve over /dev/fuse, with what would enable io_uring; "" if none did.
func uringFallback(r loadgen.CompareResult) string {
	for _, row := range r.Rows {
		if m := row.Target.Mount; row.Target.Kind == targets.TargetKernfsim && m != nil && m.FellBack != "" {
			return m.FellBack
		}
	}
	return ""
}
