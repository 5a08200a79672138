package harness

import "time"

// The JSON forms of the harness's types, which every report embeds.
// Durations are integer nanoseconds (fields ending _ns). Each form X has
// NewJSONX, from the type, and, where a report is read back, a method
// returning the type.

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

// NewJSONProvenance is p's JSON form.
func NewJSONProvenance(p Provenance) JSONProvenance {
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

// Provenance is NewJSONProvenance's inverse.
func (j JSONProvenance) Provenance() Provenance {
	p := Provenance{Program: j.Program, Version: j.Version, Revision: j.Revision, GoVersion: j.GoVersion,
		Kernel: j.Kernel, CPUModel: j.CPUModel, OnlineCPUs: j.OnlineCPUs, GOMAXPROCS: j.GOMAXPROCS, Args: j.Args}
	p.Start, _ = time.Parse(time.RFC3339, j.Start)
	return p
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

// NewJSONTarget is t's JSON form.
func NewJSONTarget(t Target) JSONTarget {
	j := JSONTarget{Kind: string(t.Kind), Label: t.Label(), Dir: t.Dir, Lock: t.Lock, Transport: t.Transport()}
	if m := t.Mount; m != nil {
		j.Mount = &JSONMount{Lock: m.Lock, Transport: m.Transport, Permissions: m.Permissions,
			EntryTimeoutNs: int64(m.EntryTimeout), AttrTimeoutNs: int64(m.AttrTimeout), NegativeTimeoutNs: int64(m.NegativeTimeout), Negatives: m.Negatives, FellBack: m.FellBack}
	}
	if t.Kind == TargetSim && (t.Build == nil || t.Tree.CPUs > 0) {
		j.CPUs = t.Tree.WithDefaults().CPUs
	}
	if t.Kind == TargetSim {
		j.Tree = t.TreeName()
		cost, shared := t.SimCost.Nanoseconds(), t.SimSharedWrites()
		j.SimCostNs, j.SimShared = &cost, &shared
	}
	return j
}

// Target is NewJSONTarget's inverse, as far as reports need.
func (j JSONTarget) Target() Target {
	t := Target{Kind: TargetKind(j.Kind), Dir: j.Dir, Lock: j.Lock}
	t.Tree.CPUs = j.CPUs
	if m := j.Mount; m != nil {
		t.Mount = &Mount{Lock: m.Lock, Transport: m.Transport, Permissions: m.Permissions,
			EntryTimeout: time.Duration(m.EntryTimeoutNs), AttrTimeout: time.Duration(m.AttrTimeoutNs),
			NegativeTimeout: time.Duration(m.NegativeTimeoutNs), Negatives: m.Negatives, FellBack: m.FellBack}
	}
	return t
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
	// lock:uncached or override; absent from a server that does not say.
	Negatives string `json:"negatives,omitempty"`
	// FellBack is why a server left to choose its transport serves over
	// /dev/fuse; absent if it did not fall back.
	FellBack string `json:"fell_back,omitempty"`
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

// NewJSONLatency is l's JSON form.
func NewJSONLatency(l Latency) JSONLatency {
	return JSONLatency{Count: l.Count, MeanNs: int64(l.Mean), P50Ns: int64(l.P50), P99Ns: int64(l.P99),
		P999Ns: int64(l.P999), MaxNs: int64(l.Max)}
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

// NewJSONErrors is es in JSON form, an empty list for none.
func NewJSONErrors(es []ErrorCount) []JSONError {
	out := []JSONError{}
	for _, e := range es {
		out = append(out, JSONError{Errno: e.Name(), Code: int(e.Errno), Churn: e.Churn,
			Expected: e.Expected(), Count: e.Count, Path: e.Path})
	}
	return out
}
