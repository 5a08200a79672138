package report

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// WriteSeed writes r in the original benchmark's format, line for line:
//
//	single: total %fms per %fus
//	concur: total %fms per %fus  CPU %d      (one per worker, in completion order)
//	times: %d threads: %d cpus: %d
//
// then a blank line and a summary block (see WriteSummary). A worker that
// was not pinned shows CPU -1.
func WriteSeed(w io.Writer, r loadgen.Result) error {
	ew := textout.NewWriter(w)
	if r.Single.Ran {
		s := r.Single.Workers
		if len(s) > 0 {
			ew.Printf("single: total %fms per %fus\n", ms(s[0].Total), perOpNs(s[0])/1e3)
		}
	}
	for _, wr := range r.Concur.Workers {
		ew.Printf("concur: total %fms per %fus  CPU %d\n", ms(wr.Total), perOpNs(wr)/1e3, wr.CPU)
	}
	ew.Printf("times: %d threads: %d cpus: %d\n", r.Times, r.Threads, r.CPUs)
	if ew.Err() != nil {
		return ew.Err()
	}
	ew.Printf("\n")
	if ew.Err() != nil {
		return ew.Err()
	}
	return WriteSummary(w, r)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// WriteSummary writes the summary block: what was measured, latency
// percentiles of every operation (HdrHistogram), throughput, the
// concur/single ratio and scaling efficiency, churn and errors.
func WriteSummary(w io.Writer, r loadgen.Result) error {
	ew := textout.NewWriter(w)
	if r.Interrupted {
		ew.Printf("interrupted:  partial results, measured until the run was stopped\n")
	}
	ew.Printf("target:       %s\n", describeTarget(r))
	ew.Printf("op:           %s\n", describeOp(r))
	ew.Printf("files:        %s\n", describeFiles(r))
	for _, ph := range []struct {
		name string
		p    loadgen.Phase
	}{{"single", r.Single}, {"concur", r.Concur}} {
		if ph.p.Ran {
			ew.Printf("%-13s %s\n", ph.name+":", ph.p.Latency.Describe())
		}
	}
	if r.MinDuration > 0 {
		ew.Printf("length:       %s\n", describeLength(r))
	}
	ew.Printf("clock:        %.0fns per read, one read per operation (included above)\n", r.ClockCostNs)
	if r.Concur.Ran {
		ew.Printf("throughput:   %.0f ops/s, %d workers in %s\n", r.OpsPerSec(), len(r.Concur.Workers), textout.Dur(r.Concur.Wall))
		ew.Printf("scaling:      concur/single %.2f (each worker's own per-op, as the seed's lines)\n", r.Ratio())
		ew.Printf("efficiency:   %.2f (wall per-op %s; 1.00 = ideal = single x threads / min(threads, cpus))\n",
			r.Efficiency(), textout.Dur(r.WallPerOp()))
		if r.Op == workload.OpHwloc || r.Op == workload.OpLstopo {
			med, last := r.TimeToDone()
			ew.Printf("time-to-done: median %s, last %s (per worker, from the start barrier to its end: an MPI rank's wait)\n",
				textout.Dur(med), textout.Dur(last))
		}
		if u := r.Concur.Lock; u != nil {
			ew.Printf("lock:         concur %s\n", lockUseText(*u))
		}
	}
	switch c := r.Churn; {
	case c != nil && r.Op == workload.OpColdplug:
		ew.Printf("hot-add:      %s\n", describeHotAdd(*c, r.Concur.Writes))
	case c != nil && r.Op == workload.OpCgroup:
		ew.Printf("cgroups:      %s\n", describeCgroupChurn(*c, r.Concur.Writes))
	case c != nil:
		ew.Printf("churn:        %s\n", describeChurn(*c, r.Concur.Writes))
	}
	if c := r.SimCalibration; c != nil {
		ew.Printf("calibration:  %s\n", c)
	}
	for _, n := range r.Notes {
		ew.Printf("note:         %s\n", n)
	}
	ew.Printf("errors:       %s\n", describeErrors(r))
	for _, w := range r.Warnings() {
		ew.Printf("warning:      %s\n", w)
	}
	ew.Printf("setup:        %s\n", r.Target.Describe())
	provenance.WriteProvenance(ew, r.Provenance, 13)
	return ew.Err()
}

func describeTarget(r loadgen.Result) string {
	t := r.Target
	switch t.Kind {
	case targets.TargetSim:
		return fmt.Sprintf("sim: in-process kernfsim walker, lock %s, %s, %s", t.Lock, t.TreeName(), describeSimWork(t))
	case targets.TargetKernfsim:
		return fmt.Sprintf("kernfsim: FUSE mount at %s, lock %s", t.Dir, t.Lock)
	}
	return "path: " + t.Dir
}

// describeSimCost says what work a sim operation does outside the lock.
func describeSimCost(cost time.Duration) string {
	if cost == 0 {
		return "bare (no work outside the lock)"
	}
	return fmt.Sprintf("+%s of work outside the lock per op, and the kernel's shared writes", textout.Dur(cost))
}

// describeSimWork is describeSimCost of t, which may make the kernel's
// shared writes without a cost.
func describeSimWork(t targets.Target) string {
	if t.SimCost == 0 && t.SimSharedWrites() {
		return "the kernel's shared writes, no other work outside the lock"
	}
	return describeSimCost(t.SimCost)
}

func describeOp(r loadgen.Result) string {
	var b strings.Builder
	b.WriteString(string(r.Op))
	if r.Missing {
		b.WriteString(" of a missing path (ENOENT is the operation)")
	}
	workers := "threads"
	if r.Procs {
		workers = "processes"
	}
	switch r.Op {
	case workload.OpLstopo:
	case workload.OpCgroup:
		fmt.Fprintf(&b, ", each file read whole (%d-byte reads)", max(r.BufSize, loadgen.CgroupPage))
	default:
		fmt.Fprintf(&b, ", %d-byte reads", r.BufSize)
	}
	fmt.Fprintf(&b, ", workers are %s, %s", workers, describePin(r))
	return b.String()
}

// describePin says which workers were pinned: the concur phase's to CPU
// i mod ncpus (Pinned), the single phase's (SinglePinned).
func describePin(r loadgen.Result) string {
	single := "the single worker not pinned (as the seed's)"
	if r.SinglePinned {
		single = "the single worker pinned"
		if w := r.Single.Workers; len(w) > 0 && w[0].CPU >= 0 {
			single += " to CPU " + strconv.Itoa(w[0].CPU)
		}
	}
	if !r.Pinned {
		return "not pinned; " + single
	}
	return "pinned to CPU i mod " + strconv.Itoa(r.CPUs) + "; " + single
}

// PinText says which workers a comparison pinned, for its header: "single
// worker not pinned, workers pinned" (the default, as the seed's).
func PinText(single, workers bool) string {
	switch {
	case single && workers:
		return "single worker and workers pinned"
	case single:
		return "single worker pinned, workers not pinned"
	case workers:
		return "single worker not pinned, workers pinned"
	}
	return "single worker and workers not pinned"
}

func describeFiles(r loadgen.Result) string {
	switch r.Op {
	case workload.OpHwloc:
		return fmt.Sprintf("%d per discovery (lists cpu/ and node/; reads every cpuN/topology/*, cpuN/cache/index*/*, "+
			"nodeN/{cpulist,cpumap,distance,meminfo}; looks up the missing names hwloc tries)", r.FilesPerOp)
	case workload.OpLstopo:
		return strings.Join(r.Files, " ")
	case workload.OpColdplug:
		return fmt.Sprintf("%d per block (%s), worker i's iteration j on block (i + j x threads) mod N",
			r.FilesPerOp, strings.Join(r.Files, " "))
	case workload.OpCgroup:
		base := make([]string, len(r.Files))
		for i, f := range r.Files {
			base[i] = path.Base(f)
		}
		return fmt.Sprintf("%d per cgroup (%s), worker i's iteration j on cgroup (i + j x threads) mod N of the N = %d below %s",
			r.FilesPerOp, strings.Join(base, " "), r.Cgroups, client.CgroupDir)
	}
	const show = 6
	names := r.Files[:min(len(r.Files), show)]
	s := strings.Join(names, " ")
	if n := len(r.Files) - len(names); n > 0 {
		s += fmt.Sprintf(" ... (%d in all)", len(r.Files))
	}
	return s
}

// describeChurn is the device writers' line; concur is their changes in
// the concur phase (Phase.Writes).
func describeChurn(c loadgen.ChurnResult, concur *latency.Latency) string {
	return describeWrites(c, fmt.Sprintf("%s changes/s asked, %.1f/s done (%d adds, %d removes)",
		askedRate(c), c.Achieved(), c.Adds, c.Removes), concur)
}

func describeHotAdd(c loadgen.ChurnResult, concur *latency.Latency) string {
	return describeWrites(c, fmt.Sprintf("%s memory blocks/s asked through %s, %.1f/s done (%d added)",
		askedRate(c), loadgen.MemProbeFile, c.Achieved(), c.Adds), concur)
}

func describeCgroupChurn(c loadgen.ChurnResult, concur *latency.Latency) string {
	return describeWrites(c, fmt.Sprintf("%s cgroups/s asked through %s and %s (containers started and stopped), %.1f/s done (%d made, %d removed)",
		askedRate(c), path.Base(client.NewCgroupPath), path.Base(client.DeleteCgroupPath), c.Achieved(), c.Adds, c.Removes), concur)
}

// askedRate is the rate asked for: "100", or "2 writers x 100" (each).
func askedRate(c loadgen.ChurnResult) string {
	if c.Writers > 1 {
		return fmt.Sprintf("%d writers x %g", c.Writers, c.Rate)
	}
	return fmt.Sprintf("%g", c.Rate)
}

// describeWrites is s, a writers' line, with how long their changes took
// (over the run, and in the concur phase) and their errors.
func describeWrites(c loadgen.ChurnResult, s string, concur *latency.Latency) string {
	if l := c.Latency; l.Count > 0 {
		s += fmt.Sprintf("; per change p50 %s p99 %s max %s", textout.Dur(l.P50), textout.Dur(l.P99), textout.Dur(l.Max))
		if concur != nil && concur.Count > 0 {
			s += fmt.Sprintf(" (concur phase: p50 %s p99 %s, %d changes)", textout.Dur(concur.P50), textout.Dur(concur.P99), concur.Count)
		}
	}
	for _, e := range c.Errors {
		s += fmt.Sprintf("; writer %s x%d on %s (unexpected)", e.Name(), e.Count, e.Path)
	}
	return s
}

func describeErrors(r loadgen.Result) string {
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

// describeLength says how MinDuration extended the phases: the
// operations each worker did.
func describeLength(r loadgen.Result) string {
	s := fmt.Sprintf("each phase at least %d ops per worker and %s from its start", r.Times, textout.Dur(r.MinDuration))
	if w := r.Single.Workers; r.Single.Ran && len(w) > 0 {
		s += fmt.Sprintf("; the single worker did %d ops", w[0].Ops)
	}
	if w := r.Concur.Workers; r.Concur.Ran && len(w) > 0 {
		s += fmt.Sprintf(", the concur workers %s each", opsRange(w))
	}
	return s
}

// opsRange is the workers' operations: "2345", or "2001-2300 (mean 2150)".
func opsRange(ws []loadgen.WorkerResult) string {
	lo, hi, sum := ws[0].Ops, ws[0].Ops, int64(0)
	for _, w := range ws {
		lo, hi, sum = min(lo, w.Ops), max(hi, w.Ops), sum+w.Ops
	}
	if lo == hi {
		return strconv.FormatInt(lo, 10)
	}
	return fmt.Sprintf("%d-%d (mean %d)", lo, hi, sum/int64(len(ws)))
}

// lockUseText is u in one line, for the seed format's summary.
func lockUseText(u loadgen.LockUse) string {
	read, write := u.Utilization()
	side := func(name string, acq, cont int64, wait, held time.Duration, util float64) string {
		s := fmt.Sprintf("%s %d acquisitions", name, acq)
		if acq > 0 {
			s += fmt.Sprintf(" (%.1f%% contended, waited %s)", 100*float64(cont)/float64(acq), textout.Dur(wait))
		}
		return s + fmt.Sprintf(", held %s (%.3f of the wall time)", textout.Dur(held), util)
	}
	s := ""
	if u.ReadSideCounted {
		s = side("read", u.ReadAcquisitions, u.ReadContended, u.ReadWait, u.ReadHeld, read) + "; "
	}
	s += side("write", u.WriteAcquisitions, u.WriteContended, u.WriteWait, u.WriteHeld, write)
	return s + fmt.Sprintf("; hold times sampled 1 in %d", u.HoldSampleEvery)
}
