package teardown

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/gobench"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/reference"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// Write writes r as a table, a row per (lock, gp), then how the
// policies compare and the seed's figures:
//
//	teardown: 5000 devices, 1 per call, ...
//	lock  gp         calls  total  caller mean  p50  p99  max  until complete  completed  grace periods
//	rcu   normal     5000   41.2s  8.24ms       ...
func Write(w io.Writer, r Result) error {
	ew := textout.NewWriter(w)
	if r.Interrupted {
		ew.Printf("interrupted: partial results, measured until the run was stopped\n")
	}
	ew.Printf("teardown: %d devices, %d per call, %s; readers: %d\n", r.Count, r.Batch, describeTarget(r), r.Readers)
	if ew.Err() != nil {
		return ew.Err()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "lock\tgp\tcalls\ttotal\tcaller mean\tp50\tp99\tmax\tuntil complete\tcompleted\tgrace periods"
	if r.Readers > 0 {
		head += "\treaders p99\traced"
	}
	fmt.Fprintln(tw, head)
	for _, run := range r.Runs {
		c := run.Caller
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d", run.Lock, run.GP, run.Calls, textout.Dur(run.Total),
			textout.Dur(c.Mean), textout.Dur(c.P50), textout.Dur(c.P99), textout.Dur(c.Max), textout.Dur(run.UntilComplete), run.Completed, run.Count,
			run.Counts.GracePeriods)
		if rd := run.Reader; rd != nil {
			fmt.Fprintf(tw, "\t%s\t%d", textout.Dur(rd.Latency.P99), rd.Raced())
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range findings(r) {
		ew.Printf("%s\n", l)
	}
	for _, ref := range References {
		ew.Printf("reference: %s\n", ref)
	}
	ew.Printf("%-9s %s\n", "setup:", r.Target.Describe())
	provenance.WriteProvenance(ew, r.Provenance, 9)
	return ew.Err()
}

func describeTarget(r Result) string {
	grace := fmt.Sprintf("gp tick %v", r.Grace.Tick)
	if r.Grace.Tick == 0 {
		grace = "gp tick 4ms"
	}
	if r.Grace.ExpediteCost > 0 {
		grace += fmt.Sprintf(", expedite cost %v", r.Grace.ExpediteCost)
	}
	if r.Grace.ExpeditedIsNormal {
		grace += ", rcu-normal"
	}
	switch r.Target.Kind {
	case targets.TargetSim:
		return fmt.Sprintf("in process (sim: kernfsim.ABI.Delete on a synthetic tree of %d CPUs, no FUSE; %s)",
			r.Target.Tree.WithDefaults().CPUs, grace)
	case targets.TargetKernfsim:
		return "one write(2) to bus/kernfsim/delete_device on a kernfsim FUSE server per run (" + grace + ")"
	}
	return "one write(2) to bus/kernfsim/delete_device on the kernfsim mount at " + r.Target.Dir
}

// findings compares the policies of r's rcu runs: normal over
// expedited total and the deferred caller, or with a batch what the
// grace period added to a call; then the references' own work.
func findings(r Result) []string {
	by := map[string]Storm{}
	var out []string
	for _, run := range r.Runs {
		if targets.GracePeriods(run.Lock) {
			by[run.GP] = run
		}
	}
	n, okN := by["normal"]
	x, okX := by["expedited"]
	d, okD := by["deferred"]
	switch {
	case r.Batch > 1 && okN:
		s := fmt.Sprintf("batch: %d devices per call: normal %s per call, %.1f grace periods per call",
			r.Batch, textout.Dur(n.Caller.Mean), float64(n.Counts.GracePeriods)/float64(max(n.Calls, 1)))
		if okD {
			s += fmt.Sprintf("; deferred %s (the removal's own work): the grace period added %s per call",
				textout.Dur(d.Caller.Mean), textout.SignedDur(n.Caller.Mean-d.Caller.Mean))
		}
		out = append(out, s)
	case r.Batch == 1 && okN && okX && x.Total > 0:
		out = append(out, fmt.Sprintf("normal/expedited: total %.0fx (target >= 100x; seed 000: 100 s / 0.6 s = 167x)",
			float64(n.Total)/float64(x.Total)))
	}
	if okD && r.Batch == 1 {
		target := ""
		if r.Target.Kind == targets.TargetSim {
			target = " (target in process: <= 2us per removal)"
		}
		out = append(out, fmt.Sprintf("deferred: caller mean %s per call%s; every teardown completed %s after the storm began",
			textout.Dur(d.Caller.Mean), target, textout.Dur(d.UntilComplete)))
	}
	for _, run := range r.Runs {
		if !targets.GracePeriods(run.Lock) {
			out = append(out, fmt.Sprintf("%s: the removal's own work, without any grace period: caller mean %s per call",
				run.Lock, textout.Dur(run.Caller.Mean)))
		}
	}
	return out
}

// Schema names the JSON document WriteJSON writes.
const Schema = "kernfsim-loadgen-teardown/1"

// JSONResult is the JSON form of a Result: one run object per
// (lock, gp). Durations are integer nanoseconds (_ns).
type JSONResult struct {
	Schema         string                    `json:"schema"`
	Provenance     provenance.JSONProvenance `json:"provenance"`
	Target         targets.JSONTarget        `json:"target"`
	Count          int                       `json:"count"`
	Batch          int                       `json:"batch"`
	Readers        int                       `json:"readers"`
	Attrs          int                       `json:"attrs"`
	CPUs           int                       `json:"cpus"`
	GPTickNs       int64                     `json:"gp_tick_ns"`
	ExpediteCostNs int64                     `json:"expedite_cost_ns"`
	RCUNormal      bool                      `json:"rcu_normal"`
	Runs           []JSONStorm               `json:"runs"`
	References     []reference.Reference     `json:"references"`
	Interrupted    bool                      `json:"interrupted"`
}

// JSONStorm is a Storm.
type JSONStorm struct {
	Lock            string  `json:"lock"`
	GP              string  `json:"gp"` // normal, expedited, deferred; "n/a" for mutex and rwsem
	Count           int     `json:"count"`
	Completed       int     `json:"completed"` // devices whose teardown had completed after the barrier
	TotalNs         int64   `json:"total_ns"`
	CallerMeanNs    int64   `json:"caller_mean_ns"`
	CallerP50Ns     int64   `json:"caller_p50_ns"`
	CallerP99Ns     int64   `json:"caller_p99_ns"`
	CallerMaxNs     int64   `json:"caller_max_ns"`
	UntilCompleteNs int64   `json:"until_complete_ns"`
	Removed         int     `json:"removed"`
	Calls           int     `json:"calls"`
	Batch           int     `json:"batch"`
	PerDeviceNs     float64 `json:"per_device_ns"` // total_ns / removed
	CreateNs        int64   `json:"create_ns"`
	Dir             string  `json:"dir,omitempty"`
	// The tree's counters over the storm and the wait; teardowns count
	// nodes (a device is two: its directory and its class link).
	TeardownsQueued       uint64       `json:"teardowns_queued"`
	TeardownsCompleted    uint64       `json:"teardowns_completed"`
	GracePeriods          uint64       `json:"grace_periods"`
	ExpeditedGracePeriods uint64       `json:"expedited_grace_periods"`
	Readers               *JSONReaders `json:"readers"` // null without readers
}

// JSONReaders is a ReaderResult.
type JSONReaders struct {
	Readers int                  `json:"readers"`
	Latency latency.JSONLatency  `json:"latency"`
	Raced   int64                `json:"raced"` // reads of a device being removed (ENOENT, ENODEV)
	Errors  []errtally.JSONError `json:"errors"`
}

// WriteJSON writes r as one indented JSON document.
func WriteJSON(w io.Writer, r Result) error {
	j := JSONResult{Schema: Schema, Provenance: provenance.NewJSONProvenance(r.Provenance), Target: targets.NewJSONTarget(r.Target), Count: r.Count, Batch: r.Batch,
		Readers: r.Readers, Attrs: r.Attrs, CPUs: r.CPUs, GPTickNs: int64(r.Grace.Tick),
		ExpediteCostNs: int64(r.Grace.ExpediteCost), RCUNormal: r.Grace.ExpeditedIsNormal,
		Runs: []JSONStorm{}, References: References, Interrupted: r.Interrupted}
	for _, run := range r.Runs {
		j.Runs = append(j.Runs, newJSONStorm(run, r.Batch))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func newJSONStorm(run Storm, batch int) JSONStorm {
	c := run.Caller
	j := JSONStorm{Lock: run.Lock, GP: run.GP, Count: run.Count, Completed: run.Completed,
		TotalNs: int64(run.Total), CallerMeanNs: int64(c.Mean), CallerP50Ns: int64(c.P50), CallerP99Ns: int64(c.P99),
		CallerMaxNs: int64(c.Max), UntilCompleteNs: int64(run.UntilComplete), Removed: run.Removed, Calls: run.Calls,
		Batch: batch, CreateNs: int64(run.Create), Dir: run.Dir, TeardownsQueued: run.Counts.Queued,
		TeardownsCompleted: run.Counts.Completed, GracePeriods: run.Counts.GracePeriods,
		ExpeditedGracePeriods: run.Counts.Expedited}
	if run.Removed > 0 {
		j.PerDeviceNs = float64(run.Total) / float64(run.Removed)
	}
	if rd := run.Reader; rd != nil {
		j.Readers = &JSONReaders{Readers: rd.Readers, Latency: latency.NewJSONLatency(rd.Latency), Raced: rd.Raced(),
			Errors: errtally.NewJSONErrors(rd.Errors)}
	}
	return j
}

// BenchName is the benchmark name prefix of WriteBench.
const BenchName = "BenchmarkTeardown"

// WriteBench writes a Go benchmark line per run:
//
//	BenchmarkTeardown/target=sim/lock=rcu/gp=normal/batch=1/readers=0  5000  8240000 ns/op  ...
//
// The iterations are the calls; ns/op is the caller's mean per call. gp
// is "na" for mutex and rwsem (a slash would split the key).
func WriteBench(w io.Writer, r Result) error {
	gw := provenance.BenchWriter(w, r.Provenance)
	gw.Comment("setup: %s", r.Target.Describe())
	for _, run := range r.Runs {
		gp := strings.ReplaceAll(run.GP, "/", "")
		c := run.Caller
		m := []gobench.Metric{gobench.M(float64(c.Mean), "ns/op"), gobench.M(float64(c.P50), "p50-ns"), gobench.M(float64(c.P99), "p99-ns"),
			gobench.M(float64(c.Max), "max-ns"), gobench.M(float64(run.Total), "total-ns"), gobench.M(float64(run.UntilComplete), "until-complete-ns"),
			gobench.M(float64(run.Completed), "completed"), gobench.M(float64(run.Counts.GracePeriods), "grace-periods")}
		if rd := run.Reader; rd != nil {
			m = append(m, gobench.M(float64(rd.Latency.P99), "reader-p99-ns"))
		}
		gw.Line(fmt.Sprintf("%s/target=%s/lock=%s/gp=%s/batch=%d/readers=%d", BenchName, r.Target.Label(), run.Lock, gp,
			r.Batch, r.Readers), int(run.Calls), m...)
	}
	return gw.Err()
}
