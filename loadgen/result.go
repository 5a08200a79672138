package loadgen

import (
	"slices"
	"time"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// Result is what one run measured. A run interrupted by its context has
// Interrupted set and holds what was measured until then.
type Result struct {
	Provenance provenance.Provenance // the build, the machine and the command line
	Target     targets.Target        // Dir is the mountpoint for a kernfsim target Run started
	Op         workload.Op
	Missing    bool
	Threads    int
	Times      int  // per worker, as configured
	CPUs       int  // CPUs this process may run on
	Pinned     bool // the concur phase's workers were pinned (not Config.NoPin)
	Procs      bool
	BufSize    int
	Files      []string // relative to the target: the K files (or dirs), the random set, or hwloc's list
	FilesPerOp int      // files one operation reads: 1, or the files of one hwloc discovery
	// Cgroups is how many cgroups an OpCgroup run's workers shared out
	// (one sweep of the hierarchy); 0 for other ops.
	Cgroups     int
	ClockCostNs float64 // one read of the monotonic clock; every operation includes one
	Single      Phase
	Concur      Phase
	Churn       *ChurnResult // nil without churn
	// SimCalibration is how Target.SimCost was chosen; nil unless
	// calibrated.
	SimCalibration *SimCalibration
	Errors         []errtally.ErrorCount // every failed operation, by errno and kind
	// Notes say what the run left out and why (a coldplug run without a
	// writer, say).
	Notes       []string
	Interrupted bool
	// SinglePinned says the single phase's worker was pinned
	// (Config.PinSingle); by default it is not, as the seed's.
	SinglePinned bool
	// MinDuration is how long each phase lasted at least
	// (Config.MinDuration); 0: Times alone decided.
	MinDuration time.Duration
	// FieldNames is Config.FieldNames, which Warnings names fields with.
	FieldNames setting.Names
}

// Phase is one phase of a run: single (one worker) or concur (Threads
// workers at once).
type Phase struct {
	Ran     bool
	Workers []WorkerResult  // in completion order
	Wall    time.Duration   // from the start barrier to the last worker's end
	Latency latency.Latency // every operation of every worker
	// Lock is how the target's lock was used over the phase, nil for a
	// target without lock counters (the real /sys).
	Lock *LockUse
	// Writes is the writers' changes made during the phase (from just
	// before its workers started to when the last ended): how long each
	// took as its writer saw it, and how many (Count); nil without
	// writers.
	Writes *latency.Latency
}

// WorkerResult is one worker's loop.
type WorkerResult struct {
	Worker int           `json:"worker"`
	CPU    int           `json:"cpu"` // -1 when not pinned
	Ops    int64         `json:"ops"` // finished operations: Times unless interrupted, more when MinDuration extended the loop
	Total  time.Duration `json:"total_ns"`
	// Done is the worker's time to done: from the phase's start barrier
	// (not from its own first operation) to its last operation's end. An
	// MPI rank's start-up waits this long for its topology discovery.
	Done time.Duration `json:"done_ns"`
}

// PerOp is the worker's mean time per operation (the original's "per").
func (w WorkerResult) PerOp() time.Duration {
	if w.Ops == 0 {
		return 0
	}
	return w.Total / time.Duration(w.Ops)
}

// Unexpected is the number of failed operations churn does not explain.
func (r Result) Unexpected() int64 {
	var n int64
	for _, e := range r.Errors {
		if !e.Expected() {
			n += e.Count
		}
	}
	if r.Churn != nil {
		for _, e := range r.Churn.Errors {
			n += e.Count
		}
	}
	return n
}

// TimeToDone is the median and the largest of the concur workers' Done:
// when half of them, and all of them, had finished.
func (r Result) TimeToDone() (median, last time.Duration) {
	d := make([]time.Duration, 0, len(r.Concur.Workers))
	for _, w := range r.Concur.Workers {
		d = append(d, w.Done)
	}
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	if n := len(d); n%2 == 0 {
		return (d[n/2-1] + d[n/2]) / 2, d[n-1]
	}
	return d[len(d)/2], d[len(d)-1]
}

// SinglePerOp is the single worker's time per operation.
func (r Result) SinglePerOp() time.Duration { return meanPerOp(r.Single.Workers) }

// ConcurPerOp is the mean over the concurrent workers of their time per
// operation: the seed's "per", each worker timing its own loop.
func (r Result) ConcurPerOp() time.Duration { return meanPerOp(r.Concur.Workers) }

// WallPerOp is the concur phase's wall time per operation of a worker:
// Wall over the operations each worker did (their mean, which is each
// one's count when every worker did Times; a phase MinDuration extended
// lets each do as many as it could). When the workers run all at once,
// as in the original, it equals ConcurPerOp; unlike it, it stays right
// when a short run lets the scheduler run the workers one after another
// (each then times only its own turn). Tables, benchmark lines and
// Efficiency use it.
func (r Result) WallPerOp() time.Duration { return r.Concur.WallPerOp() }

// WallPerOp is Wall x workers / their operations: Wall over the mean
// operations of a worker.
func (p Phase) WallPerOp() time.Duration {
	var ops int64
	for _, w := range p.Workers {
		ops += w.Ops
	}
	if ops == 0 {
		return 0
	}
	return p.Wall * time.Duration(len(p.Workers)) / time.Duration(ops)
}

// OpsPerWorker is the mean of the phase's workers' operations: Times,
// unless MinDuration extended the phase or it was interrupted.
func (p Phase) OpsPerWorker() float64 {
	if len(p.Workers) == 0 {
		return 0
	}
	var ops int64
	for _, w := range p.Workers {
		ops += w.Ops
	}
	return float64(ops) / float64(len(p.Workers))
}

// PerOp is the mean over the phase's workers of their time per
// operation (the seed's "per").
func (p Phase) PerOp() time.Duration { return meanPerOp(p.Workers) }

func meanPerOp(ws []WorkerResult) time.Duration {
	var sum time.Duration
	var n int
	for _, w := range ws {
		if w.Ops > 0 {
			sum += w.PerOp()
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// Ratio is concur per-op over single per-op (the seed's comparison); 0 if
// either phase is missing.
func (r Result) Ratio() float64 {
	s, c := r.SinglePerOp(), r.ConcurPerOp()
	if s == 0 || c == 0 {
		return 0
	}
	return float64(c) / float64(s)
}

// Efficiency is the scaling efficiency: the time per operation perfect
// scaling would give, single x threads / min(threads, cpus), over the
// measured WallPerOp. 1.0 is ideal; 0.5 means the work took twice as long
// as it would with the CPUs shared perfectly.
func (r Result) Efficiency() float64 {
	return efficiency(r.SinglePerOp(), r.WallPerOp(), len(r.Concur.Workers), r.CPUs)
}

func efficiency(single, concur time.Duration, threads, cpus int) float64 {
	if single == 0 || concur == 0 || threads == 0 || cpus == 0 {
		return 0
	}
	ideal := float64(single) * float64(threads) / float64(min(threads, cpus))
	return ideal / float64(concur)
}

// OpsPerSec is the concur phase's aggregate throughput: every worker's
// operations over the phase's wall time.
func (r Result) OpsPerSec() float64 {
	if r.Concur.Wall <= 0 {
		return 0
	}
	return float64(r.TotalOps()) / r.Concur.Wall.Seconds()
}
