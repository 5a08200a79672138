package loadgen

import (
	"fmt"
	"slices"
	"time"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// Limits below which a run's figures do not mean what they seem.
const (
	// MaxEfficiency is the highest scaling efficiency a real run shows
	// (1.00 is ideal, plus noise). Above it the single and concur phases
	// measured different things, usually because a run was too short.
	MaxEfficiency = 1.05
	// MinWorkerLoop is the shortest worker loop that shares CPUs
	// meaningfully when threads outnumber CPUs: five 4 ms scheduler ticks
	// (HZ=250). A loop shorter than a few time slices can run to its end
	// before the workers sharing its CPU start, so they do not contend.
	MinWorkerLoop = 20 * time.Millisecond
)

// Warnings say why the run's figures may mislead: an efficiency above
// MaxEfficiency, or, with more threads than CPUs, worker loops shorter than
// MinWorkerLoop. Each names the way out, the fields as r.FieldNames
// names them.
func (r Result) Warnings() []string {
	w := r.warnings()
	for i := range w {
		w[i] = r.FieldNames.Put(w[i])
	}
	return w
}

// warnings are Warnings naming fields as {Field}.
func (r Result) warnings() []string {
	var w []string
	if !r.Concur.Ran || len(r.Concur.Workers) == 0 {
		return nil
	}
	if e := r.Efficiency(); e > MaxEfficiency {
		w = append(w, r.efficiencyWarning(e))
	}
	if loop := r.medianLoop(); r.Threads > r.CPUs && loop < MinWorkerLoop {
		w = append(w, fmt.Sprintf("a worker's loop took %s, under %s (a few scheduler time slices), with %d threads on %d CPUs: "+
			"the workers may have run one after another instead of at once (raise {Times} or {MinDuration})", textout.Dur(loop), textout.Dur(MinWorkerLoop), r.Threads, r.CPUs))
	}
	return w
}

// efficiencyWarning explains an efficiency e above MaxEfficiency: a run
// too short or noisy, or, where only the concur workers were pinned (the
// seed's way) and a server answers, a pinned client served faster than
// the unpinned single one.
func (r Result) efficiencyWarning(e float64) string {
	s := fmt.Sprintf("efficiency %.2f is above %.2f, which no real scaling gives: "+
		"the run is too short or too noisy to compare phases (raise {Times} or {MinDuration})", e, MaxEfficiency)
	if r.Pinned && !r.SinglePinned && r.Target.Kind != targets.TargetSim {
		s += ", or the pinned concur workers were served faster than the unpinned single one " +
			"(a FUSE server over io_uring queues each CPU's requests apart; {PinSingle} compares like with like)"
	}
	return s
}

// medianLoop is the median of the concur workers' loop times.
func (r Result) medianLoop() time.Duration {
	t := make([]time.Duration, 0, len(r.Concur.Workers))
	for _, w := range r.Concur.Workers {
		t = append(t, w.Total)
	}
	slices.Sort(t)
	return t[len(t)/2]
}

// TotalOps is the concur phase's operations, every worker's together.
func (r Result) TotalOps() int64 {
	var n int64
	for _, w := range r.Concur.Workers {
		n += w.Ops
	}
	return n
}

// NsPerOp is the concur phase's wall time over all its operations, as
// Go's b.RunParallel reports ns/op: the reciprocal of the throughput.
func (r Result) NsPerOp() float64 {
	if n := r.TotalOps(); n > 0 {
		return float64(r.Concur.Wall) / float64(n)
	}
	return 0
}
