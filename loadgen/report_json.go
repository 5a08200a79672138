package loadgen

import (
	"encoding/json"
	"io"
	"time"
)

// SchemaRun names the JSON document WriteJSON writes.
const SchemaRun = "kernfsim-loadgen-run/1"

// JSONRun is the JSON form of a Result. Durations are integer
// nanoseconds (fields ending _ns); per-op means are float nanoseconds.
type JSONRun struct {
	Schema      string         `json:"schema"`
	Provenance  JSONProvenance `json:"provenance"`
	Target      JSONTarget     `json:"target"`
	Op          string         `json:"op"`
	Missing     bool           `json:"missing"`
	Threads     int            `json:"threads"`
	Times       int            `json:"times"`
	CPUs        int            `json:"cpus"`
	Pinned      bool           `json:"pinned"`
	Procs       bool           `json:"procs"`
	BufSize     int            `json:"bufsize"`
	Files       []string       `json:"files"`
	FilesPerOp  int            `json:"files_per_op"`
	Cgroups     int            `json:"cgroups,omitempty"` // OpCgroup: the cgroups the workers shared out
	ClockCostNs float64        `json:"clock_cost_ns"`
	Single      *JSONPhase     `json:"single"`
	Concur      *JSONPhase     `json:"concur"`
	Ratio       float64        `json:"ratio"`      // concur per-op / single per-op
	Efficiency  float64        `json:"efficiency"` // 1.0 ideal
	OpsPerSec   float64        `json:"ops_per_sec"`
	// TimeToDone summarises the concur workers' done_ns (hwloc and lstopo).
	TimeToDone *JSONTimeToDone `json:"time_to_done,omitempty"`
	Churn      *JSONChurn      `json:"churn,omitempty"`
	// SimCalibration is how the sim's cost was calibrated, if it was.
	SimCalibration *JSONSimCalibration `json:"sim_calibration,omitempty"`
	Errors         []JSONError         `json:"errors"`
	Unexpected     int64               `json:"unexpected_errors"`
	Notes          []string            `json:"notes,omitempty"`
	Warnings       []string            `json:"warnings,omitempty"` // Result.Warnings: figures that may mislead
	Interrupted    bool                `json:"interrupted"`
	// SinglePinned says the single worker was pinned (Config.PinSingle);
	// pinned is the concur workers'.
	SinglePinned bool `json:"single_pinned"`
	// MinDurationNs is how long each phase lasted at least
	// (Config.MinDuration); 0: times alone decided. The operations done
	// are each phase's ops_per_worker, and each worker's ops.
	MinDurationNs int64 `json:"min_duration_ns"`
}

// JSONProvenance is a Provenance.
type JSONProvenance struct {
	Program    string   `json:"program"`
	Version    string   `json:"version"`
	Revision   string   `json:"revision"` // "" when the build was not VCS-stamped
	GoVersion  string   `json:"go_version"`
	Kernel     string   `json:"kernel"`
	CPUModel   string   `json:"cpu_model"`
	OnlineCPUs int      `json:"online_cpus"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Args       []string `json:"args"`
	Start      string   `json:"start"` // RFC 3339
}

// JSONProvenanceOf is p's JSON form.
func JSONProvenanceOf(p Provenance) JSONProvenance {
	j := JSONProvenance{Program: p.Program, Version: p.Version, Revision: p.Revision, GoVersion: p.GoVersion,
		Kernel: p.Kernel, CPUModel: p.CPUModel, OnlineCPUs: p.OnlineCPUs, GOMAXPROCS: p.GOMAXPROCS, Args: p.Args}
	if j.Args == nil {
		j.Args = []string{}
	}
	if !p.Start.IsZero() {
		j.Start = p.Start.UTC().Format(time.RFC3339)
	}
	return j
}

// ToProvenance is JSONProvenance's inverse.
func (j JSONProvenance) ToProvenance() Provenance {
	p := Provenance{Program: j.Program, Version: j.Version, Revision: j.Revision, GoVersion: j.GoVersion,
		Kernel: j.Kernel, CPUModel: j.CPUModel, OnlineCPUs: j.OnlineCPUs, GOMAXPROCS: j.GOMAXPROCS, Args: j.Args}
	p.Start, _ = time.Parse(time.RFC3339, j.Start)
	return p
}

// JSONTimeToDone is Result.TimeToDone.
type JSONTimeToDone struct {
	MedianNs int64 `json:"median_ns"`
	LastNs   int64 `json:"last_ns"`
}

// JSONTarget is a Target.
type JSONTarget struct {
	Kind  string `json:"kind"`           // sim, path, kernfsim
	Label string `json:"label"`          // sim, sys, path, kernfsim: the bench "target=" key
	Dir   string `json:"dir,omitempty"`  // path and kernfsim
	Lock  string `json:"lock,omitempty"` // sim and kernfsim
	CPUs  int    `json:"tree_cpus,omitempty"`
	Tree  string `json:"tree,omitempty"` // sim: "synthetic tree of 64 CPUs", "mirror of /sys"
	// Transport is how operations reach the tree: devfuse (or what the
	// server reported) for a server loadgen started, none for sim and path.
	Transport string `json:"transport"`
	// Mount is the server's own account of how it serves; absent for sim
	// and path targets.
	Mount *JSONMount `json:"mount,omitempty"`
	// SimCostNs is the sim's work outside the lock per op (Target.SimCost):
	// 0 is the bare sim; absent for other targets.
	SimCostNs *int64 `json:"sim_cost_ns,omitempty"`
	// SimShared says the sim made the kernel's shared writes (ref-walk's,
	// the descriptor table's: Target.SimShared, on with any SimCost);
	// absent for other targets.
	SimShared *bool `json:"sim_shared_writes,omitempty"`
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

func jsonSimCalibration(c *SimCalibration) *JSONSimCalibration {
	if c == nil {
		return nil
	}
	return &JSONSimCalibration{Dir: c.Dir, Op: c.Op, Lock: c.Lock, RealPerOpNs: int64(c.Real),
		BarePerOpNs: int64(c.Bare), CostNs: int64(c.Cost)}
}

// JSONMount is a Mount.
type JSONMount struct {
	Lock              string `json:"lock"` // with its details: "rcu gp=normal tick=4ms"
	Transport         string `json:"transport"`
	Permissions       string `json:"permissions"` // kernel or server
	EntryTimeoutNs    int64  `json:"entry_timeout_ns"`
	AttrTimeoutNs     int64  `json:"attr_timeout_ns"`
	NegativeTimeoutNs int64  `json:"negative_timeout_ns"`
	// Negatives is the server's rule for missing names: lock:cached,
	// lock:uncached or override; absent from servers too old to say.
	Negatives string `json:"negatives,omitempty"`
	// FellBack is why a server left to choose its transport serves over
	// /dev/fuse; absent if it did not fall back.
	FellBack string `json:"fell_back,omitempty"`
}

// JSONPhase is a Phase; nil when the phase did not run.
type JSONPhase struct {
	WallNs      int64        `json:"wall_ns"`
	PerOpNs     float64      `json:"per_op_ns"`      // mean over workers of their total / ops (the seed's "per")
	WallPerOpNs float64      `json:"wall_per_op_ns"` // wall / ops per worker
	Latency     JSONLatency  `json:"latency"`
	Workers     []JSONWorker `json:"workers"` // completion order
	// OpsPerWorker is the mean of the workers' ops: times, or more where
	// min_duration_ns extended the phase.
	OpsPerWorker float64 `json:"ops_per_worker"`
	// Lock is how the target's lock was used over the phase; absent for
	// a target without lock counters (the real /sys).
	Lock *JSONLockUse `json:"lock,omitempty"`
	// Writes is the writers' changes during the phase: how long each took
	// as its writer saw it (count: how many); absent without writers.
	Writes *JSONLatency `json:"writes,omitempty"`
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

func jsonLockUse(u *LockUse) *JSONLockUse {
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

// JSONLatency is a Latency.
type JSONLatency struct {
	Count  int64 `json:"count"`
	MeanNs int64 `json:"mean_ns"`
	P50Ns  int64 `json:"p50_ns"`
	P99Ns  int64 `json:"p99_ns"`
	P999Ns int64 `json:"p999_ns"`
	MaxNs  int64 `json:"max_ns"`
}

// JSONChurn is a ChurnResult.
type JSONChurn struct {
	Rate     float64 `json:"rate"` // per writer
	Writers  int     `json:"writers,omitempty"`
	Achieved float64 `json:"achieved"` // every writer's
	// Latency is how long each change took as its writer saw it, over
	// the run; absent from results made before it was measured.
	Latency   *JSONLatency `json:"latency,omitempty"`
	Adds      int64        `json:"adds"`
	Removes   int64        `json:"removes"`
	ElapsedNs int64        `json:"elapsed_ns"`
	Errors    []JSONError  `json:"errors"`
}

// JSONError is an ErrorCount.
type JSONError struct {
	Errno    string `json:"errno"` // ENOENT; "success" when a missing path was found
	Code     int    `json:"code"`
	Churn    bool   `json:"churn"` // on a churned device's file
	Expected bool   `json:"expected"`
	Count    int64  `json:"count"`
	Path     string `json:"path"`
}

// WriteJSON writes r as one indented JSON document (JSONRun).
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ToJSON(r))
}

// ToJSON converts r to its JSON form.
func ToJSON(r Result) JSONRun {
	j := JSONRun{Schema: SchemaRun, Provenance: JSONProvenanceOf(r.Provenance), Warnings: r.Warnings(), Target: JSONTargetOf(r.Target), Op: string(r.Op), Missing: r.Missing,
		Threads: r.Threads, Times: r.Times, CPUs: r.CPUs, Pinned: r.Pinned, Procs: r.Procs,
		BufSize: r.BufSize, Files: r.Files, FilesPerOp: r.FilesPerOp, Cgroups: r.Cgroups, ClockCostNs: r.ClockCostNs,
		Single: jsonPhase(r.Single), Concur: jsonPhase(r.Concur), Ratio: r.Ratio(),
		Efficiency: r.Efficiency(), OpsPerSec: r.OpsPerSec(), Errors: JSONErrors(r.Errors),
		Unexpected: r.Unexpected(), Notes: r.Notes, Interrupted: r.Interrupted,
		SimCalibration: jsonSimCalibration(r.SimCalibration), SinglePinned: r.SinglePinned, MinDurationNs: int64(r.MinDuration)}
	if r.Concur.Ran && (r.Op == OpHwloc || r.Op == OpLstopo) {
		med, last := r.TimeToDone()
		j.TimeToDone = &JSONTimeToDone{MedianNs: int64(med), LastNs: int64(last)}
	}
	if c := r.Churn; c != nil {
		j.Churn = &JSONChurn{Rate: c.Rate, Writers: c.Writers, Achieved: c.Achieved(), Adds: c.Adds, Removes: c.Removes,
			ElapsedNs: int64(c.Elapsed), Errors: JSONErrors(c.Errors)}
		if c.Latency.Count > 0 {
			l := LatencyJSON(c.Latency)
			j.Churn.Latency = &l
		}
	}
	return j
}

func JSONTargetOf(t Target) JSONTarget {
	j := JSONTarget{Kind: string(t.Kind), Label: TargetLabel(t), Dir: t.Dir, Lock: t.Lock, Transport: t.Transport()}
	if m := t.Mount; m != nil {
		j.Mount = &JSONMount{Lock: m.Lock, Transport: m.Transport, Permissions: m.Permissions,
			EntryTimeoutNs: int64(m.EntryTimeout), AttrTimeoutNs: int64(m.AttrTimeout), NegativeTimeoutNs: int64(m.NegativeTimeout), Negatives: m.Negatives, FellBack: m.FellBack}
	}
	if t.Kind == TargetSim && (t.Build == nil || t.Tree.CPUs > 0) {
		j.CPUs = t.Tree.WithDefaults().CPUs
	}
	if t.Kind == TargetSim {
		j.Tree = describeTree(t)
		cost, shared := t.SimCost.Nanoseconds(), t.sharedWrites()
		j.SimCostNs, j.SimShared = &cost, &shared
	}
	return j
}

func jsonPhase(p Phase) *JSONPhase {
	if !p.Ran {
		return nil
	}
	j := &JSONPhase{WallNs: int64(p.Wall), PerOpNs: float64(meanPerOp(p.Workers)), WallPerOpNs: float64(wallPerOp(p)), Latency: JSONLatency{
		Count: p.Latency.Count, MeanNs: int64(p.Latency.Mean), P50Ns: int64(p.Latency.P50),
		P99Ns: int64(p.Latency.P99), P999Ns: int64(p.Latency.P999), MaxNs: int64(p.Latency.Max)},
		Workers: []JSONWorker{}, OpsPerWorker: p.OpsPerWorker(), Lock: jsonLockUse(p.Lock)}
	if p.Writes != nil {
		l := LatencyJSON(*p.Writes)
		j.Writes = &l
	}
	for _, w := range p.Workers {
		j.Workers = append(j.Workers, JSONWorker{Worker: w.Worker, CPU: w.CPU, Ops: w.Ops,
			TotalNs: int64(w.Total), PerOpNs: perOpNs(w), DoneNs: int64(w.Done)})
	}
	return j
}

func perOpNs(w WorkerResult) float64 {
	if w.Ops == 0 {
		return 0
	}
	return float64(w.Total) / float64(w.Ops)
}

func JSONErrors(es []ErrorCount) []JSONError {
	out := []JSONError{}
	for _, e := range es {
		out = append(out, JSONError{Errno: e.Name(), Code: int(e.Errno), Churn: e.Churn,
			Expected: e.Expected(), Count: e.Count, Path: e.Path})
	}
	return out
}

// nsOf is d in float nanoseconds.
func nsOf(d time.Duration) float64 { return float64(d) }

// LatencyJSON is l in JSON form.
func LatencyJSON(l Latency) JSONLatency {
	return JSONLatency{Count: l.Count, MeanNs: int64(l.Mean), P50Ns: int64(l.P50), P99Ns: int64(l.P99),
		P999Ns: int64(l.P999), MaxNs: int64(l.Max)}
}
