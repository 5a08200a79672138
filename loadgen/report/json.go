package report

import (
	"encoding/json"
	"io"

	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// SchemaRun names the JSON document WriteJSON writes.
const SchemaRun = "kernfsim-loadgen-run/1"

// JSONRun is the JSON form of a Result. Durations are integer
// nanoseconds (fields ending _ns); per-op means are float nanoseconds.
type JSONRun struct {
	Schema      string                    `json:"schema"`
	Provenance  provenance.JSONProvenance `json:"provenance"`
	Target      targets.JSONTarget        `json:"target"`
	Op          string                    `json:"op"`
	Missing     bool                      `json:"missing"`
	Threads     int                       `json:"threads"`
	Times       int                       `json:"times"`
	CPUs        int                       `json:"cpus"`
	Pinned      bool                      `json:"pinned"`
	Procs       bool                      `json:"procs"`
	BufSize     int                       `json:"bufsize"`
	Files       []string                  `json:"files"`
	FilesPerOp  int                       `json:"files_per_op"`
	Cgroups     int                       `json:"cgroups,omitempty"` // OpCgroup: the cgroups the workers shared out
	ClockCostNs float64                   `json:"clock_cost_ns"`
	Single      *JSONPhase                `json:"single"`
	Concur      *JSONPhase                `json:"concur"`
	Ratio       float64                   `json:"ratio"`      // concur per-op / single per-op
	Efficiency  float64                   `json:"efficiency"` // 1.0 ideal
	OpsPerSec   float64                   `json:"ops_per_sec"`
	// TimeToDone summarises the concur workers' done_ns (hwloc and lstopo).
	TimeToDone *JSONTimeToDone `json:"time_to_done,omitempty"`
	Churn      *JSONChurn      `json:"churn,omitempty"`
	// SimCalibration is how the sim's cost was calibrated, if it was.
	SimCalibration *JSONSimCalibration  `json:"sim_calibration,omitempty"`
	Errors         []errtally.JSONError `json:"errors"`
	Unexpected     int64                `json:"unexpected_errors"`
	Notes          []string             `json:"notes,omitempty"`
	Warnings       []string             `json:"warnings,omitempty"` // Result.Warnings: figures that may mislead
	Interrupted    bool                 `json:"interrupted"`
	// SinglePinned says the single worker was pinned (Config.PinSingle);
	// pinned is the concur workers'.
	SinglePinned bool `json:"single_pinned"`
	// MinDurationNs is how long each phase lasted at least
	// (Config.MinDuration); 0: times alone decided. The operations done
	// are each phase's ops_per_worker, and each worker's ops.
	MinDurationNs int64 `json:"min_duration_ns"`
}

// JSONTimeToDone is Result.TimeToDone.
type JSONTimeToDone struct {
	MedianNs int64 `json:"median_ns"`
	LastNs   int64 `json:"last_ns"`
}

// JSONSimCalibration is a SimCalibration.
type JSONSimCalibration struct {
	Dir         string `json:"dir"`
	Op          string `json:"op"`
	Lock        string `json:"lock"`
	RealPerOpNs int64  `json:"real_single_per_op_ns"`
	BarePerOpNs int64  `json:"bare_single_per_op_ns"`
	CostNs      int64  `json:"cost_ns"`
}

func newJSONSimCalibration(c *loadgen.SimCalibration) *JSONSimCalibration {
	if c == nil {
		return nil
	}
	return &JSONSimCalibration{Dir: c.Dir, Op: c.Op, Lock: c.Lock, RealPerOpNs: int64(c.Real),
		BarePerOpNs: int64(c.Bare), CostNs: int64(c.Cost)}
}

// JSONPhase is a Phase; nil when the phase did not run.
type JSONPhase struct {
	WallNs      int64               `json:"wall_ns"`
	PerOpNs     float64             `json:"per_op_ns"`      // mean over workers of their total / ops (the seed's "per")
	WallPerOpNs float64             `json:"wall_per_op_ns"` // wall / ops per worker
	Latency     latency.JSONLatency `json:"latency"`
	Workers     []JSONWorker        `json:"workers"` // completion order
	// OpsPerWorker is the mean of the workers' ops: times, or more where
	// min_duration_ns extended the phase.
	OpsPerWorker float64 `json:"ops_per_worker"`
	// Lock is how the target's lock was used over the phase; absent for
	// a target without lock counters (the real /sys).
	Lock *JSONLockUse `json:"lock,omitempty"`
	// Writes is the writers' changes during the phase: how long each took
	// as its writer saw it (count: how many); absent without writers.
	Writes *latency.JSONLatency `json:"writes,omitempty"`
}

// JSONLockUse is a LockUse: the lock's counters over the phase, as
// lock_stat gives them, and each side's utilization (held over wall).
type JSONLockUse struct {
	ReadAcquisitions  int64   `json:"read_acquisitions"`
	ReadContended     int64   `json:"read_contended"`
	ReadWaitNs        int64   `json:"read_wait_ns"`
	ReadHeldNs        int64   `json:"read_held_ns"`
	ReadUtilization   float64 `json:"read_utilization"`
	ReadCounted       bool    `json:"read_counted"`
	WriteAcquisitions int64   `json:"write_acquisitions"`
	WriteContended    int64   `json:"write_contended"`
	WriteWaitNs       int64   `json:"write_wait_ns"`
	WriteHeldNs       int64   `json:"write_held_ns"`
	WriteUtilization  float64 `json:"write_utilization"`
	HoldSampleEvery   int     `json:"hold_sample_every"`
	WallNs            int64   `json:"wall_ns"`
}

func newJSONLockUse(u *loadgen.LockUse) *JSONLockUse {
	if u == nil {
		return nil
	}
	read, write := u.Utilization()
	return &JSONLockUse{ReadAcquisitions: u.ReadAcquisitions, ReadContended: u.ReadContended,
		ReadWaitNs: int64(u.ReadWait), ReadHeldNs: int64(u.ReadHeld), ReadUtilization: read, ReadCounted: u.ReadSideCounted,
		WriteAcquisitions: u.WriteAcquisitions, WriteContended: u.WriteContended, WriteWaitNs: int64(u.WriteWait),
		WriteHeldNs: int64(u.WriteHeld), WriteUtilization: write, HoldSampleEvery: u.HoldSampleEvery, WallNs: int64(u.Wall)}
}

// JSONWorker is a WorkerResult.
type JSONWorker struct {
	Worker  int     `json:"worker"`
	CPU     int     `json:"cpu"` // -1: not pinned
	Ops     int64   `json:"ops"`
	TotalNs int64   `json:"total_ns"`
	PerOpNs float64 `json:"per_op_ns"`
	DoneNs  int64   `json:"done_ns,omitempty"` // from the start barrier to the worker's end
}

// JSONChurn is a ChurnResult.
type JSONChurn struct {
	Rate     float64 `json:"rate"` // per writer
	Writers  int     `json:"writers,omitempty"`
	Achieved float64 `json:"achieved"` // every writer's
	// Latency is how long each change took as its writer saw it, over
	// the run. A saved result may lack it.
	Latency   *latency.JSONLatency `json:"latency,omitempty"`
	Adds      int64                `json:"adds"`
	Removes   int64                `json:"removes"`
	ElapsedNs int64                `json:"elapsed_ns"`
	Errors    []errtally.JSONError `json:"errors"`
}

// WriteJSON writes r as one indented JSON document (JSONRun).
func WriteJSON(w io.Writer, r loadgen.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewJSONRun(r))
}

// NewJSONRun is r's JSON form.
func NewJSONRun(r loadgen.Result) JSONRun {
	j := JSONRun{Schema: SchemaRun, Provenance: provenance.NewJSONProvenance(r.Provenance), Warnings: r.Warnings(), Target: targets.NewJSONTarget(r.Target), Op: string(r.Op), Missing: r.Missing,
		Threads: r.Threads, Times: r.Times, CPUs: r.CPUs, Pinned: r.Pinned, Procs: r.Procs,
		BufSize: r.BufSize, Files: r.Files, FilesPerOp: r.FilesPerOp, Cgroups: r.Cgroups, ClockCostNs: r.ClockCostNs,
		Single: newJSONPhase(r.Single), Concur: newJSONPhase(r.Concur), Ratio: r.Ratio(),
		Efficiency: r.Efficiency(), OpsPerSec: r.OpsPerSec(), Errors: errtally.NewJSONErrors(r.Errors),
		Unexpected: r.Unexpected(), Notes: r.Notes, Interrupted: r.Interrupted,
		SimCalibration: newJSONSimCalibration(r.SimCalibration), SinglePinned: r.SinglePinned, MinDurationNs: int64(r.MinDuration)}
	if r.Concur.Ran && (r.Op == workload.OpHwloc || r.Op == workload.OpLstopo) {
		med, last := r.TimeToDone()
		j.TimeToDone = &JSONTimeToDone{MedianNs: int64(med), LastNs: int64(last)}
	}
	if c := r.Churn; c != nil {
		j.Churn = &JSONChurn{Rate: c.Rate, Writers: c.Writers, Achieved: c.Achieved(), Adds: c.Adds, Removes: c.Removes,
			ElapsedNs: int64(c.Elapsed), Errors: errtally.NewJSONErrors(c.Errors)}
		if c.Latency.Count > 0 {
			l := latency.NewJSONLatency(c.Latency)
			j.Churn.Latency = &l
		}
	}
	return j
}

func newJSONPhase(p loadgen.Phase) *JSONPhase {
	if !p.Ran {
		return nil
	}
	j := &JSONPhase{WallNs: int64(p.Wall), PerOpNs: float64(p.PerOp()), WallPerOpNs: float64(p.WallPerOp()), Latency: latency.JSONLatency{
		Count: p.Latency.Count, MeanNs: int64(p.Latency.Mean), P50Ns: int64(p.Latency.P50),
		P99Ns: int64(p.Latency.P99), P999Ns: int64(p.Latency.P999), MaxNs: int64(p.Latency.Max)},
		Workers: []JSONWorker{}, OpsPerWorker: p.OpsPerWorker(), Lock: newJSONLockUse(p.Lock)}
	if p.Writes != nil {
		l := latency.NewJSONLatency(*p.Writes)
		j.Writes = &l
	}
	for _, w := range p.Workers {
		j.Workers = append(j.Workers, JSONWorker{Worker: w.Worker, CPU: w.CPU, Ops: w.Ops,
			TotalNs: int64(w.Total), PerOpNs: perOpNs(w), DoneNs: int64(w.Done)})
	}
	return j
}

func perOpNs(w loadgen.WorkerResult) float64 {
	if w.Ops == 0 {
		return 0
	}
	return float64(w.Total) / float64(w.Ops)
}
