package targets

import (
	"time"

	"github.com/kernfsim/kernfsim/loadgen/serverproc"
)

// The JSON form of this package's type, which every report embeds.
// Durations are integer nanoseconds (fields ending _ns). The form has
// NewJSONX, from the type, and, where a report is read back, a method
// returning the type.

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
	Mount *serverproc.JSONMount `json:"mount,omitempty"`
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
		j.Mount = &serverproc.JSONMount{Lock: m.Lock, Transport: m.Transport, Permissions: m.Permissions,
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
		t.Mount = &serverproc.Mount{Lock: m.Lock, Transport: m.Transport, Permissions: m.Permissions,
			EntryTimeout: time.Duration(m.EntryTimeoutNs), AttrTimeout: time.Duration(m.AttrTimeoutNs),
			NegativeTimeout: time.Duration(m.NegativeTimeoutNs), Negatives: m.Negatives, FellBack: m.FellBack}
	}
	return t
}
