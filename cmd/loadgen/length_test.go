package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/report"
)

// --pin and --pin-single: by default the single worker runs unpinned and
// the concurrent workers pinned, as the seed's; each flag changes its own
// phase, and every format says which.
func TestPinFlags(t *testing.T) {
	for _, tc := range []struct {
		flags          []string
		single, concur bool
		seed, header   string
	}{
		{nil, false, true, "pinned to CPU i mod #; the single worker not pinned (as the seed's)", "single worker not pinned, workers pinned"},
		{[]string{"--pin-single"}, true, true, "pinned to CPU i mod #; the single worker pinned to CPU #", "single worker and workers pinned"},
		{[]string{"--pin=false"}, false, false, "not pinned; the single worker not pinned (as the seed's)", "single worker and workers not pinned"},
		{[]string{"--pin=false", "--pin-single"}, true, false, "not pinned; the single worker pinned to CPU #", "single worker pinned, workers not pinned"},
	} {
		t.Run(strings.Join(append([]string{"flags"}, tc.flags...), " "), func(t *testing.T) {
			j := runJSON(t, append(append([]string{}, smallSim...), tc.flags...)...)
			if j.SinglePinned != tc.single || j.Pinned != tc.concur {
				t.Errorf("single_pinned %v, pinned %v: want %v, %v", j.SinglePinned, j.Pinned, tc.single, tc.concur)
			}
			if cpu := j.Single.Workers[0].CPU; (cpu >= 0) != tc.single {
				t.Errorf("single worker on CPU %d: want pinned %v", cpu, tc.single)
			}
			for _, w := range j.Concur.Workers {
				if (w.CPU >= 0) != tc.concur {
					t.Errorf("concur worker %d on CPU %d: want pinned %v", w.Worker, w.CPU, tc.concur)
				}
			}
			code, out, errOut := runArgs(context.Background(), append(append([]string{}, smallSim...), tc.flags...)...)
			if code != cli.ExitOK || !strings.Contains(shape(out), "workers are threads, "+tc.seed+"\n") {
				t.Errorf("seed: exit %d, stderr %q: want %q in:\n%s", code, errOut, tc.seed, out)
			}
			code, out, errOut = runArgs(context.Background(), append(append([]string{}, quickSimCompare...), tc.flags...)...)
			if code != cli.ExitOK || !strings.Contains(out, ", "+tc.header+", ") {
				t.Errorf("compare: exit %d, stderr %q: want %q in:\n%s", code, errOut, tc.header, out)
			}
		})
	}
}

// quickSimCompare is a short comparison of the sim rows, its phases sized
// by the count alone.
var quickSimCompare = []string{"compare", "--sim", "--locks", "rwsem", "--threads", "1", "--repeats", "1", "--ops", "files",
	"--sim-times", "50", "--cpus", "8", "--min-duration", "0", "--warm-up", "0"}

// --min-duration extends a run's phases past --times, and the JSON says
// how far.
func TestMinDurationFlag(t *testing.T) {
	j := runJSON(t, append(append([]string{}, smallSim...), "--times", "1", "--min-duration", "30ms")...)
	if j.MinDurationNs != 30e6 || j.Times != 1 {
		t.Errorf("min_duration_ns %d, times %d: want 30ms, 1", j.MinDurationNs, j.Times)
	}
	for name, ph := range map[string]*report.JSONPhase{"single": j.Single, "concur": j.Concur} {
		var ops int64
		for _, w := range ph.Workers {
			ops += w.Ops
			if w.Ops < 1 || w.DoneNs < 30e6 {
				t.Errorf("%s worker %+v: want at least 1 op, done at 30ms or later", name, w)
			}
		}
		if want := float64(ops) / float64(len(ph.Workers)); ph.OpsPerWorker != want || ph.WallNs < 30e6 {
			t.Errorf("%s: ops_per_worker %v, wall %dns: want %v, at least 30ms", name, ph.OpsPerWorker, ph.WallNs, want)
		}
	}
	if j := runJSON(t, smallSim...); j.MinDurationNs != 0 || j.Single.OpsPerWorker != 50 || j.Concur.OpsPerWorker != 50 {
		t.Errorf("default: min_duration_ns %d, ops_per_worker %v and %v: want 0, --times alone (50)",
			j.MinDurationNs, j.Single.OpsPerWorker, j.Concur.OpsPerWorker)
	}
}

// compare's --min-duration and --warm-up: defaults, 0 for none, and in
// the header and the JSON.
func TestCompareLengthFlags(t *testing.T) {
	for _, tc := range []struct {
		flags          []string
		minDur, warmUp int64
		header         string
	}{
		{[]string{"--min-duration", "0", "--warm-up", "0"}, 0, 0, " runs x 50 ops per worker (sim: 50), "},
		{[]string{"--min-duration", "20ms", "--warm-up", "5ms"}, 20e6, 5e6,
			" runs x at least 50 ops per worker (sim: 50) and 20.0ms a phase, each row warmed up 5.00ms first, "},
		{nil, loadgen.DefaultCompareMinDuration.Nanoseconds(), loadgen.DefaultCompareWarmUp.Nanoseconds(), " and 200ms a phase, each row warmed up 50.0ms first, "},
	} {
		args := append([]string{"compare", "--sim", "--locks", "rwsem", "--threads", "1", "--repeats", "1", "--ops", "files",
			"--times", "50", "--sim-times", "50", "--cpus", "8"}, tc.flags...)
		code, out, errOut := runArgs(context.Background(), append(args, "--format", "json")...)
		var j report.JSONCompare
		if code != cli.ExitOK || json.Unmarshal([]byte(out), &j) != nil {
			t.Fatalf("%q: exit %d, stderr %q", tc.flags, code, errOut)
		}
		if j.MinDurationNs != tc.minDur || j.WarmUpNs != tc.warmUp {
			t.Errorf("%q: min_duration_ns %d, warm_up_ns %d: want %d, %d", tc.flags, j.MinDurationNs, j.WarmUpNs, tc.minDur, tc.warmUp)
		}
		if run := j.Cells[0].Runs[0]; run.SingleOps < 50 || run.OpsPerWorker < 50 || tc.minDur == 0 && (run.SingleOps != 50 || run.OpsPerWorker != 50) {
			t.Errorf("%q: single_ops %d, ops_per_worker %v: want 50, or more with a duration", tc.flags, run.SingleOps, run.OpsPerWorker)
		}
		code, out, errOut = runArgs(context.Background(), args...)
		if code != cli.ExitOK || !strings.Contains(strings.SplitN(out, "\n", 2)[0], tc.header) {
			t.Errorf("%q: exit %d, stderr %q: want %q in the header:\n%s", tc.flags, code, errOut, tc.header, out)
		}
	}
}

func TestLengthFlagsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim", "--min-duration", "-1s"}, "--min-duration must be 0 or more, got -1s"},
		{[]string{"--sim", "--min-duration", "soon"}, `invalid argument "soon" for "--min-duration" flag`},
		{append(append([]string{}, quickSimCompare...), "--min-duration", "-5ms"), "--min-duration must be 0 or more, got -5ms"},
		{append(append([]string{}, quickSimCompare...), "--warm-up", "-5ms"), "--warm-up must be 0 or more, got -5ms"},
		{[]string{"--sim", "--pin-single=maybe"}, `invalid argument "maybe" for "--pin-single" flag`},
	} {
		code, out, errOut := runArgs(context.Background(), tc.args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q (stdout %q): want exit 2 and %q", tc.args, code, errOut, out, tc.want)
		}
	}
}

func TestProgressText(t *testing.T) {
	for _, tc := range []struct {
		p    loadgen.Progress
		want string
	}{
		{loadgen.Progress{Phase: "single", Done: 50, Total: 100, Elapsed: 1e9}, "loadgen: single 50/100 ops, 1s, ~1s left"},
		{loadgen.Progress{Phase: "concur", Done: 150, Total: 100, MinDuration: 2e9, Elapsed: 1e9}, "loadgen: concur 150 ops, 1s of at least 2s"},
		{loadgen.Progress{Phase: "concur", Elapsed: 1e9}, "loadgen: concur running, 1s"},
	} {
		if got := progressText(tc.p); got != tc.want {
			t.Errorf("progressText(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
