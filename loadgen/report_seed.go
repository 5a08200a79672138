package loadgen

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteSeed writes r in the original benchmark's format, line for line:
//
//	single: total %fms per %fus
//	concur: total %fms per %fus  CPU %d      (one per worker, in completion order)
//	times: %d threads: %d cpus: %d
//
// then a blank line and a summary block (see WriteSummary). A worker that
// was not pinned shows CPU -1.
func WriteSeed(w io.Writer, r Result) error {
	ew := &errWriter{w: w}
	if r.Single.Ran {
		s := r.Single.Workers
		if len(s) > 0 {
			ew.printf("single: total %fms per %fus\n", ms(s[0].Total), perOpNs(s[0])/1e3)
		}
	}
	for _, wr := range r.Concur.Workers {
		ew.printf("concur: total %fms per %fus  CPU %d\n", ms(wr.Total), perOpNs(wr)/1e3, wr.CPU)
	}
	ew.printf("times: %d threads: %d cpus: %d\n", r.Times, r.Threads, r.CPUs)
	if ew.err != nil {
		return ew.err
	}
	ew.printf("\n")
	if ew.err != nil {
		return ew.err
	}
	return WriteSummary(w, r)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// WriteSummary writes the summary block: what was measured, latency
// percentiles of every operation (HdrHistogram), throughput, the
// concur/single ratio and scaling efficiency, churn and errors.
func WriteSummary(w io.Writer, r Result) error {
	ew := &errWriter{w: w}
	if r.Interrupted {
		ew.printf("interrupted:  partial results, measured until the run was stopped\n")
	}
	ew.printf("target:       %s\n", describeTarget(r))
	ew.printf("op:           %s\n", describeOp(r))
	ew.printf("files:        %s\n", describeFiles(r))
	for _, ph := range []struct {
		name string
		p    Phase
	}{{"single", r.Single}, {"concur", r.Concur}} {
		if ph.p.Ran {
			ew.printf("%-13s %s\n", ph.name+":", describeLatency(ph.p.Latency))
		}
	}
	ew.printf("clock:        %.0fns per read, one read per operation (included above)\n", r.ClockCostNs)
	if r.Concur.Ran {
		ew.printf("throughput:   %.0f ops/s, %d workers in %s\n", r.OpsPerSec(), len(r.Concur.Workers), fmtDur(r.Concur.Wall))
		ew.printf("scaling:      concur/single %.2f (each worker's own per-op, as the seed's lines)\n", r.Ratio())
		ew.printf("efficiency:   %.2f (wall per-op %s; 1.00 = ideal = single x threads / min(threads, cpus))\n",
			r.Efficiency(), fmtDur(r.WallPerOp()))
		if r.Op == OpHwloc || r.Op == OpLstopo {
			med, last := r.TimeToDone()
			ew.printf("time-to-done: median %s, last %s (per worker, from the start barrier to its end: an MPI rank's wait)\n",
				fmtDur(med), fmtDur(last))
		}
	}
	if r.Churn != nil && r.Op == OpColdplug {
		ew.printf("hot-add:      %s\n", describeHotAdd(*r.Churn))
	} else if r.Churn != nil {
		ew.printf("churn:        %s\n", describeChurn(*r.Churn))
	}
	if c := r.SimCalibration; c != nil {
		ew.printf("calibration:  %s\n", c)
	}
	for _, n := range r.Notes {
		ew.printf("note:         %s\n", n)
	}
	ew.printf("errors:       %s\n", describeErrors(r))
	for _, w := range r.Warnings() {
		ew.printf("warning:      %s\n", w)
	}
	ew.printf("setup:        %s\n", r.Target.Describe())
	writeProvenance(ew, r.Provenance, 13)
	return ew.err
}

func describeTarget(r Result) string {
	t := r.Target
	switch t.Kind {
	case TargetSim:
		return fmt.Sprintf("sim: in-process kernfsim walker, lock %s, %s, %s", t.Lock, describeTree(t), describeSimCost(t.SimCost))
	case TargetKernfsim:
		return fmt.Sprintf("kernfsim: FUSE mount at %s, lock %s", t.Dir, t.Lock)
	}
	return "path: " + t.Dir
}

// describeSimCost says what work a sim operation does outside the lock.
func describeSimCost(cost time.Duration) string {
	if cost == 0 {
		return "bare (no work outside the lock)"
	}
	return fmt.Sprintf("+%s of work outside the lock per op", fmtDur(cost))
}

// describeTree names a sim target's tree.
func describeTree(t Target) string {
	if t.Build != nil {
		return t.Build.String()
	}
	return fmt.Sprintf("synthetic tree of %d CPUs", t.Tree.WithDefaults().CPUs)
}

func describeOp(r Result) string {
	var b strings.Builder
	b.WriteString(string(r.Op))
	if r.Missing {
		b.WriteString(" of a missing path (ENOENT is the operation)")
	}
	workers := "threads"
	if r.Procs {
		workers = "processes"
	}
	pin := "pinned to CPU i mod " + strconv.Itoa(r.CPUs)
	if !r.Pinned {
		pin = "not pinned"
	}
	if r.Op != OpLstopo {
		fmt.Fprintf(&b, ", %d-byte reads", r.BufSize)
	}
	fmt.Fprintf(&b, ", workers are %s, %s", workers, pin)
	return b.String()
}

func describeFiles(r Result) string {
	switch r.Op {
	case OpHwloc:
		return fmt.Sprintf("%d per discovery (lists cpu/ and node/; reads every cpuN/topology/*, cpuN/cache/index*/*, "+
			"nodeN/{cpulist,cpumap,distance,meminfo}; looks up the missing names hwloc tries)", r.FilesPerOp)
	case OpLstopo:
		return strings.Join(r.Files, " ")
	case OpColdplug:
		return fmt.Sprintf("%d per block (%s), worker i's iteration j on block (i + j x threads) mod N",
			r.FilesPerOp, strings.Join(r.Files, " "))
	}
	const show = 6
	names := r.Files[:min(len(r.Files), show)]
	s := strings.Join(names, " ")
	if n := len(r.Files) - len(names); n > 0 {
		s += fmt.Sprintf(" ... (%d in all)", len(r.Files))
	}
	return s
}

func describeLatency(l Latency) string {
	return fmt.Sprintf("mean %s  p50 %s  p99 %s  p99.9 %s  max %s  (%d ops)",
		fmtDur(l.Mean), fmtDur(l.P50), fmtDur(l.P99), fmtDur(l.P999), fmtDur(l.Max), l.Count)
}

func describeChurn(c ChurnResult) string {
	s := fmt.Sprintf("%g changes/s asked, %.1f/s done (%d adds, %d removes)", c.Rate, c.Achieved(), c.Adds, c.Removes)
	for _, e := range c.Errors {
		s += fmt.Sprintf("; writer %s x%d on %s (unexpected)", e.Name(), e.Count, e.Path)
	}
	return s
}

func describeHotAdd(c ChurnResult) string {
	s := fmt.Sprintf("%g memory blocks/s asked through %s, %.1f/s done (%d added)", c.Rate, memProbeFile, c.Achieved(), c.Adds)
	for _, e := range c.Errors {
		s += fmt.Sprintf("; writer %s x%d on %s (unexpected)", e.Name(), e.Count, e.Path)
	}
	return s
}

func describeErrors(r Result) string {
	if len(r.Errors) == 0 {
		return "none"
	}
	var parts []string
	for _, e := range r.Errors {
		kind := "unexpected"
		if e.Expected() {
			kind = "expected: churned file"
		}
		if e.Errno == 0 {
			kind = "unexpected: the missing path exists"
		}
		parts = append(parts, fmt.Sprintf("%s x%d on %s (%s)", e.Name(), e.Count, e.Path, kind))
	}
	return strings.Join(parts, "; ")
}

// fmtDur prints d with three significant digits in ns, us, ms or s.
func fmtDur(d time.Duration) string {
	v := float64(d)
	switch {
	case v < 1e3:
		return strconv.FormatFloat(v, 'f', 0, 64) + "ns"
	case v < 1e6:
		return sig3(v/1e3) + "us"
	case v < 1e9:
		return sig3(v/1e6) + "ms"
	}
	return sig3(v/1e9) + "s"
}

func sig3(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// errWriter remembers the first write error and skips writes after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
