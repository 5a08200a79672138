package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

func TestFindings(t *testing.T) {
	r := syntheticCompare(seedLike)
	got := strings.Join(Findings(&r, "missing"), "\n")
	for _, want := range []string{
		"kernfsim rwsem against mutex: x0.18 at 48 threads; within noise at 1",
		"sim rwsem against mutex: x0.76 at 1, x0.54 at 48 threads",
		"kernfsim rows: the tree's own code (sim mutex, 800ns) is 1.7% of a one-thread per-op on the mount (47.0us)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("findings:\n%s\nwant a line with %q", got, want)
		}
	}
}

func TestFindingsNothingResolved(t *testing.T) {
	flat := map[string]map[int][]float64{
		"kernfsim mutex": {1: {46, 47, 48}, 48: {6300, 6400, 6500}},
		"kernfsim rwsem": {1: {45, 47, 49}, 48: {6350, 6420, 6600}},
	}
	r := syntheticCompare(flat)
	got := Findings(&r, "missing")
	if len(got) == 0 || got[0] != "kernfsim: no lock differs from mutex beyond the runs' spread, at any thread count" {
		t.Errorf("findings: %q", got)
	}
}

func TestSeedTable(t *testing.T) {
	r := syntheticCompare(seedLike)
	var b bytes.Buffer
	require.NoError(t, WriteSeedTable(&b, r))
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"seed 002 (Ian Kent, 2021",
		// 48 threads: the seed's x0.08, the mount's x0.18 (resolved, smaller), the sim's x0.54
		"missing 48 2.14ms 161us x0.08 (48) 6.40ms 1.17ms x0.18 same direction, smaller (seed: 48 CPUs, here 2) 48.0us 26.0us x0.54 same direction, smaller",
		"not measured (give --threads 16 and --locks mutex,rwsem)",
		"missing 1 2.39us 2.14us x0.90 (16) 47.0us 47.0us x1.00~ one thread: nothing contends",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("seed table:\n%s\nwant %q", out, want)
		}
	}
	// x0.03 against the seed's x0.08: the same direction, and an effect
	// larger than the seed's by more than 1.5x.
	c := rowCell(&r, targets.TargetKernfsim, "rwsem", "missing", 48)
	for i := range c.Runs {
		c.Runs[i].PerOp = c.Runs[i].PerOp / 1170 * 200
	}
	if _, v := seedVerdict(&r, targets.TargetKernfsim, seedFigure{"missing", 48, 48, 2139048 * time.Nanosecond, 160549 * time.Nanosecond}); v != "same direction, larger (seed: 48 CPUs, here 2)" {
		t.Errorf("verdict of x0.03 against x0.08: %q", v)
	}
	r.Ops = []string{"stat"}
	b.Reset()
	if err := WriteSeedTable(&b, r); err != nil || !strings.Contains(b.String(), "seed 002 measured --ops files,missing") {
		t.Errorf("seed table of an op the seed did not measure: %v\n%s", err, b.String())
	}
}

func TestGroupedWarnings(t *testing.T) {
	r := syntheticCompare(seedLike)
	effWarn := "efficiency 1.20 is above 1.05"
	shortWarn := "worker loop of 5ms is under 20ms"
	for i := range r.Cells {
		c := &r.Cells[i]
		switch c.Row.Label() + fmt.Sprint(c.Threads) {
		case "kernfsim mutex1", "kernfsim rwsem48":
			c.Runs[0].Warnings = []string{effWarn}
		case "sim rwsem48":
			c.Runs[1].Warnings = []string{effWarn, shortWarn}
			c.Runs[2].Warnings = []string{shortWarn}
		case "sim mutex1":
			c.Runs[2].Warnings = []string{effWarn}
		}
	}
	r.Pinned = true // the single worker not pinned, the concurrent ones pinned: the seed's way
	var b bytes.Buffer
	ew := textout.NewWriter(&b)
	writeGroupedWarnings(ew, r)
	out := b.String()
	for _, want := range []string{
		"worker loops under 20.0ms (raise --times, or --sim-times for the sim rows): sim rwsem missing threads=48 (2/3)\n",
		"efficiency above 1.05 (raise --repeats; --times, or --sim-times for the sim rows): sim rwsem missing threads=48 (1/3)\n",
		"efficiency above 1.05 on the FUSE rows: a lone client waits",
		"more runs would not change it); 2 cells\n",
		"efficiency above 1.05 at one thread: the single worker runs unpinned",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("warnings:\n%s\nwant %q", out, want)
		}
	}
	for _, c := range r.Cells {
		if want := c.Row.Label() == "sim rwsem" && c.Threads == 48; flagged(r, c) != want {
			t.Errorf("%s threads=%d: flagged %v, want %v", c.Row.Label(), c.Threads, flagged(r, c), want)
		}
	}
	r.SinglePinned = true // both pinned: nothing explains sim mutex's efficiency at one thread
	if c := rowCell(&r, targets.TargetSim, "mutex", "missing", 1); !flagged(r, *c) {
		t.Error("sim mutex threads=1 with --pin-single: not flagged")
	}
}

// The compare table lists each kind of warning once, with the cells it
// came in and in how many of their runs.
func TestCompareWarningsSummary(t *testing.T) {
	r := compareFixture()
	r.SinglePinned = true // else efficiency at one thread is explained by the unpinned single worker
	c := &r.Cells[0]
	c.Runs[0].Warnings = []string{"efficiency 1.50 is above 1.05, ...: ...", "a worker's loop took 1ms, ...: ..."}
	c.Runs[2].Warnings = []string{"efficiency 1.20 is above 1.05, ...: ..."}
	var b bytes.Buffer
	require.NoError(t, WriteCompareTable(&b, r))
	for _, want := range []string{
		"  efficiency above 1.05 (raise --repeats; --times, or --sim-times for the sim rows): sim mutex files threads=1 (2/3)\n",
		"  worker loops under 20.0ms (raise --times, or --sim-times for the sim rows): sim mutex files threads=1 (1/3)\n",
	} {
		if !strings.Contains(b.String(), want) || strings.Count(b.String(), "sim mutex files threads=1 (") != 2 || !strings.Contains(b.String(), "e0.67!") {
			t.Errorf("want a line %q and a flagged cell:\n%s", want, b.String())
		}
	}
}
