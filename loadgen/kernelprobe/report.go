package kernelprobe

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen/gobench"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/reference"
)

// References are the seeds' figures for r's reproduction.
func References(r Result) []reference.Reference {
	switch {
	case r.Op == UmountStorm:
		return umountStormReferences
	case r.NS == "pid":
		return unsharePIDReferences
	}
	return unshareReferences
}

// Write writes a reproduction's result: the kernel and its
// rcupdate parameters, the figures, the host check, the seeds' figures.
func Write(w io.Writer, r Result) error {
	ew := textout.NewWriter(w)
	if r.Interrupted {
		ew.Printf("interrupted:  partial results, measured until the run was stopped\n")
	}
	ew.Printf("kernel:       %s %s\n", r.Kernel.Release, r.Kernel.Version)
	var ps []string
	for _, p := range r.Kernel.RCU {
		ps = append(ps, p.Name+"="+p.Value)
	}
	ew.Printf("rcupdate:     %s\n", strings.Join(ps, " "))
	if r.Op == UmountStorm {
		writeUmountStorm(ew, r)
	} else {
		writeUnshare(ew, r)
	}
	if r.Exit > 0 {
		ew.Printf("exit:         %s from the child's report to its exit (what was left in it torn down)\n", textout.Dur(r.Exit))
	}
	for _, ref := range References(r) {
		ew.Printf("reference:    %s\n", ref)
	}
	return ew.Err()
}

func writeUmountStorm(ew *textout.Writer, r Result) {
	how := "umount2(path, 0)"
	if r.Lazy {
		how = "umount2(path, MNT_DETACH) (umount -l)"
	}
	ew.Printf("umount-storm: %d tmpfs mounted, then %s each, in a private mount namespace under %s (on a tmpfs over $TMPDIR there)\n",
		r.Count, how, r.Dir)
	ew.Printf("mount:        %s\n", describeKernelPhase(r.Mount, "mount"))
	ew.Printf("umount:       %s\n", describeKernelPhase(r.Umount, "umount"))
	if h := r.Host; h != nil {
		switch {
		case len(h.Leaked) > 0:
			ew.Printf("host mounts:  LEAKED %d of the storm's mounts: %s\n", len(h.Leaked), strings.Join(h.Leaked, "; "))
		case h.Unchanged():
			ew.Printf("host mounts:  unchanged (%d before, %d after)\n", h.Before, h.After)
		default:
			ew.Printf("host mounts:  none of the storm's; %d changes by others meanwhile (%d before, %d after): %s\n",
				len(h.Others), h.Before, h.After, strings.Join(h.Others, "; "))
		}
	}
}

func writeUnshare(ew *textout.Writer, r Result) {
	if r.ForkPerIteration {
		ew.Printf("unshare:      %d x clone(%s) of true(1) and wait, in a child process: a fork per iteration, because unshare(%s) "+
			"only moves later children into the new namespace and fails again until one has entered it\n", r.Count, r.Flag, r.Flag)
	} else {
		ew.Printf("unshare:      %d x unshare(%s) in a child process, on one thread\n", r.Count, r.Flag)
	}
	ew.Printf("iterations:   %s\n", describeKernelPhase(r.Unshare, "iteration"))
	if b := r.Baseline; b != nil {
		ew.Printf("baseline:     %s (the same without %s)\n", describeKernelPhase(b, "iteration"), r.Flag)
		if u := r.Unshare; u != nil && u.Calls > 0 && b.Calls > 0 {
			ew.Printf("namespace:    %s p50, %s mean wall and %s system per iteration above the baseline (iterations alternateTimed with it)\n",
				textout.SignedDur(u.Latency.P50-b.Latency.P50), textout.SignedDur(u.Wall/time.Duration(u.Calls)-b.Wall/time.Duration(b.Calls)),
				textout.SignedDur(u.Sys/time.Duration(u.Calls)-b.Sys/time.Duration(b.Calls)))
		}
	}
}

// describeKernelPhase is "total 1.23s (246us per mount), sys 1.10s, user 2ms;
// latency mean ... (5000 ops)".
func describeKernelPhase(p *Phase, per string) string {
	if p == nil || p.Calls == 0 {
		return "none"
	}
	n := time.Duration(p.Calls)
	return fmt.Sprintf("wall %s (%s per %s), sys %s (%s per %s), user %s; %s", textout.Dur(p.Wall), textout.Dur(p.Wall/n), per,
		textout.Dur(p.Sys), textout.Dur(p.Sys/n), per, textout.Dur(p.User), p.Latency.Describe())
}

// Schemas of WriteJSON's documents.
const (
	SchemaUmountStorm = "kernfsim-loadgen-umount-storm/1"
	SchemaUnshare     = "kernfsim-loadgen-unshare/1"
)

// JSONResult is the JSON form of a Result; the fields of the other
// reproduction are left out.
type JSONResult struct {
	Schema      string                `json:"schema"`
	Kernel      JSONInfo              `json:"kernel"`
	Count       int                   `json:"count"`
	Lazy        *bool                 `json:"lazy,omitempty"`
	Dir         string                `json:"dir,omitempty"`
	Mount       *JSONPhase            `json:"mount,omitempty"`
	Umount      *JSONPhase            `json:"umount,omitempty"`
	Host        *JSONHostMounts       `json:"host_mounts,omitempty"`
	NS          string                `json:"ns,omitempty"`
	Flag        string                `json:"flag,omitempty"`
	ForkPerIter *bool                 `json:"fork_per_iteration,omitempty"`
	Unshare     *JSONPhase            `json:"unshare,omitempty"`
	Baseline    *JSONPhase            `json:"baseline,omitempty"`
	ExitNs      int64                 `json:"exit_ns"`
	References  []reference.Reference `json:"references"`
	Interrupted bool                  `json:"interrupted"`
}

// JSONInfo is a Info; rcupdate maps each parameter to its
// value ("?" when unreadable).
type JSONInfo struct {
	Release  string            `json:"release"`
	Version  string            `json:"version"`
	RCUpdate map[string]string `json:"rcupdate"`
}

// JSONPhase is a Phase.
type JSONPhase struct {
	Calls        int                 `json:"calls"`
	WallNs       int64               `json:"wall_ns"`
	PerCallNs    float64             `json:"per_call_ns"`
	SysNs        int64               `json:"sys_ns"`
	SysPerCallNs float64             `json:"sys_per_call_ns"`
	UserNs       int64               `json:"user_ns"`
	Latency      latency.JSONLatency `json:"latency"`
}

// JSONHostMounts is a HostMounts.
type JSONHostMounts struct {
	Before    int      `json:"before"`
	After     int      `json:"after"`
	Unchanged bool     `json:"unchanged"`
	Leaked    []string `json:"leaked"`
	Others    []string `json:"others"`
}

// WriteJSON writes r as one indented JSON document.
func WriteJSON(w io.Writer, r Result) error {
	ki := JSONInfo{Release: r.Kernel.Release, Version: r.Kernel.Version, RCUpdate: map[string]string{}}
	for _, p := range r.Kernel.RCU {
		ki.RCUpdate[p.Name] = p.Value
	}
	j := JSONResult{Kernel: ki, Count: r.Count, ExitNs: int64(r.Exit), References: References(r),
		Interrupted: r.Interrupted}
	if r.Op == UmountStorm {
		j.Schema, j.Lazy, j.Dir = SchemaUmountStorm, &r.Lazy, r.Dir
		j.Mount, j.Umount = newJSONPhase(r.Mount), newJSONPhase(r.Umount)
		if h := r.Host; h != nil {
			j.Host = &JSONHostMounts{Before: h.Before, After: h.After, Unchanged: h.Unchanged(),
				Leaked: append([]string{}, h.Leaked...), Others: append([]string{}, h.Others...)}
		}
	} else {
		j.Schema, j.NS, j.Flag, j.ForkPerIter = SchemaUnshare, r.NS, r.Flag, &r.ForkPerIteration
		j.Unshare, j.Baseline = newJSONPhase(r.Unshare), newJSONPhase(r.Baseline)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func newJSONPhase(p *Phase) *JSONPhase {
	if p == nil {
		return nil
	}
	j := &JSONPhase{Calls: p.Calls, WallNs: int64(p.Wall), SysNs: int64(p.Sys), UserNs: int64(p.User),
		Latency: latency.NewJSONLatency(p.Latency)}
	if p.Calls > 0 {
		j.PerCallNs, j.SysPerCallNs = float64(p.Wall)/float64(p.Calls), float64(p.Sys)/float64(p.Calls)
	}
	return j
}

// WriteBench writes Go benchmark lines: per phase for umount-storm
// (BenchmarkUmountStorm/lazy=false/phase=umount), per loop for unshare
// (BenchmarkUnshare/ns=ipc; ns=pid-baseline for pid's baseline). ns/op is
// the wall time per call.
func WriteBench(w io.Writer, r Result) error {
	gw := provenance.HostBenchWriter(w)
	line := func(name string, p *Phase) {
		if p == nil || p.Calls == 0 {
			return
		}
		n := float64(p.Calls)
		gw.Line(name, int(p.Calls), gobench.M(float64(p.Wall)/n, "ns/op"), gobench.M(float64(p.Latency.P50), "p50-ns"),
			gobench.M(float64(p.Latency.P99), "p99-ns"), gobench.M(float64(p.Latency.Max), "max-ns"),
			gobench.M(float64(p.Sys)/n, "sys-ns/op"))
	}
	if r.Op == UmountStorm {
		line(fmt.Sprintf("BenchmarkUmountStorm/lazy=%t/phase=mount", r.Lazy), r.Mount)
		line(fmt.Sprintf("BenchmarkUmountStorm/lazy=%t/phase=umount", r.Lazy), r.Umount)
		return gw.Err()
	}
	line("BenchmarkUnshare/ns="+r.NS, r.Unshare)
	line("BenchmarkUnshare/ns="+r.NS+"-baseline", r.Baseline)
	return gw.Err()
}
