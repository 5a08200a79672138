package report

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"

	"github.com/kernfsim/kernfsim/internal/goldenfile"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/gobench"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/sysfs"
)

func TestWriteSeedGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteSeed(&b, fixture()))
	goldenfile.Check(t, "seed.golden", b.String())
	// The first lines are exactly the original program's.
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{
		"single: total 37.802725ms per 3.780273us",
		"concur: total 40.000000ms per 4.000000us  CPU 1",
		"concur: total 42.000000ms per 4.200000us  CPU 0",
		"times: 10000 threads: 2 cpus: 2",
	} {
		if lines[i] != want {
			t.Errorf("line %d: got %q, want %q", i+1, lines[i], want)
		}
	}
}

func TestWriteJSONGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, fixture()))
	goldenfile.Check(t, "run.json.golden", b.String())
	var j JSONRun
	require.NoError(t, json.Unmarshal(b.Bytes(), &j))
	if j.Schema != SchemaRun || len(j.Concur.Workers) != 2 || j.Errors[0].Errno != "ENOENT" || !j.Errors[0].Expected {
		t.Errorf("round trip: %+v", j)
	}
}

func TestWriteBenchGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteBench(&b, fixture()))
	goldenfile.Check(t, "bench.golden", b.String())
}

func TestEfficiency(t *testing.T) {
	r := fixture()
	// single 3.78us x 2 threads / 2 cpus over the wall per-op, 42ms / 10000 = 4.2us.
	if got, want := r.Efficiency(), 3.7802725/4.2; abs(got-want) > 1e-3 {
		t.Errorf("Efficiency() = %v, want %v", got, want)
	}
	if got, want := r.Ratio(), 4.1/3.7802725; abs(got-want) > 1e-3 {
		t.Errorf("Ratio() = %v, want %v", got, want)
	}
}

func TestWritersReportsGolden(t *testing.T) {
	checkGolden(t, writersFixture, golden[loadgen.Result]{"seed_writers.golden", WriteSeed},
		golden[loadgen.Result]{"run_writers.json.golden", WriteJSON}, golden[loadgen.Result]{"bench_writers.golden", WriteBench})
}

func TestWarnings(t *testing.T) {
	ok := fixture()
	if w := ok.Warnings(); len(w) != 0 {
		t.Errorf("a sound run warns: %q", w)
	}
	fast := fixture() // efficiency 0.9 -> 1.5: concur faster than perfect scaling
	fast.Concur.Wall = fast.Concur.Wall * 9 / 15
	if w := fast.Warnings(); len(w) != 1 || !strings.Contains(w[0], "efficiency 1.50 is above 1.05") {
		t.Errorf("efficiency %.2f: warnings %q", fast.Efficiency(), w)
	}
	short := fixture() // 4 threads on 2 CPUs, each loop 1 ms
	short.Threads = 4
	short.Concur.Workers = append(short.Concur.Workers, short.Concur.Workers...)
	for i := range short.Concur.Workers {
		short.Concur.Workers[i].Total = time.Millisecond
	}
	short.Concur.Wall = 200 * time.Millisecond
	if w := short.Warnings(); len(w) != 1 || !strings.Contains(w[0], "a worker's loop took 1.00ms, under 20.0ms") {
		t.Errorf("1 ms loops, 4 threads on 2 CPUs: warnings %q", w)
	}
	short.Threads = 2 // as many threads as CPUs: no time slices shared
	if w := short.Warnings(); len(w) != 0 {
		t.Errorf("1 ms loops, 2 threads on 2 CPUs: warnings %q", w)
	}
}

// Plain and compare bench output parse as Go benchmark results with the
// same metrics, the -N suffix and the header's configuration.
func TestBenchReadable(t *testing.T) {
	var plain, cmp bytes.Buffer
	require.NoError(t, WriteBench(&plain, fixture()))
	require.NoError(t, WriteCompareBench(&cmp, compareFixture()))
	pu, pn := readBench(t, plain.String())
	cu, cn := readBench(t, cmp.String())
	if !slices.Equal(pu, cu) {
		t.Errorf("plain units %q, compare units %q: want the same", pu, cu)
	}
	if pn != 1 || cn != 3*2*2*3 {
		t.Errorf("%d plain, %d compare results; want 1 and 36", pn, cn)
	}
}

func readBench(t *testing.T, s string) (units []string, n int) {
	t.Helper()
	r := benchfmt.NewReader(strings.NewReader(s), "x")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			t.Fatalf("not a result: %v", r.Result())
		}
		if cpu := res.GetConfig("cpu"); cpu != testProvenance.CPUModel || res.GetConfig("pkg") != gobench.Pkg {
			t.Errorf("config cpu %q, pkg %q", cpu, res.GetConfig("pkg"))
		}
		if _, parts := res.Name.Parts(); len(parts) == 0 || string(parts[len(parts)-1]) != "-2" {
			t.Errorf("name %q lacks the -2 GOMAXPROCS suffix", res.Name)
		}
		units = units[:0]
		for _, v := range res.Values {
			units = append(units, v.Unit)
		}
		n++
	}
	require.NoError(t, r.Err())
	return units, n
}

// Every report says which workers were pinned and how long the phases
// ran.
func TestReportsPinningAndLength(t *testing.T) {
	r := fixture()
	r.MinDuration = 20 * time.Millisecond
	r.Single.Workers[0].Ops = 12345
	r.Concur.Workers[0].Ops = 20000
	var b bytes.Buffer
	require.NoError(t, WriteSeed(&b, r))
	for _, want := range []string{"times: 10000 threads: 2 cpus: 2\n",
		"workers are threads, pinned to CPU i mod 2; the single worker not pinned (as the seed's)\n",
		"length:       each phase at least 10000 ops per worker and 20.0ms from its start; the single worker did 12345 ops, " +
			"the concur workers 10000-20000 (mean 15000) each\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("seed output lacks %q:\n%s", want, b.String())
		}
	}
	r.SinglePinned, r.Pinned = true, false
	if got, want := describePin(r), "not pinned; the single worker pinned to CPU 0"; got != want {
		t.Errorf("describePin: got %q, want %q", got, want)
	}
	j := NewJSONRun(r)
	if !j.SinglePinned || j.Pinned || j.MinDurationNs != 20e6 || j.Single.OpsPerWorker != 12345 || j.Concur.OpsPerWorker != 15000 {
		t.Errorf("JSON: single_pinned %v, pinned %v, min_duration_ns %d, ops_per_worker %v and %v",
			j.SinglePinned, j.Pinned, j.MinDurationNs, j.Single.OpsPerWorker, j.Concur.OpsPerWorker)
	}
}

// An efficiency above 1.05 where only the concur workers were pinned and a
// server answered may be the pinning's doing, and the warning says so.
func TestEfficiencyWarningPinning(t *testing.T) {
	for _, tc := range []struct {
		kind         targets.TargetKind
		singlePinned bool
		pinning      bool
	}{{targets.TargetKernfsim, false, true}, {targets.TargetPath, false, true}, {targets.TargetKernfsim, true, false}, {targets.TargetSim, false, false}} {
		r := fixture()
		r.Concur.Wall = r.Concur.Wall * 9 / 15 // efficiency 1.50
		r.Target.Kind, r.SinglePinned = tc.kind, tc.singlePinned
		w := r.Warnings()
		if len(w) != 1 || !strings.HasPrefix(w[0], "efficiency 1.50 is above 1.05") || strings.Contains(w[0], "--pin-single") != tc.pinning {
			t.Errorf("%s, single pinned %v: warnings %q, want the pinning named: %v", tc.kind, tc.singlePinned, w, tc.pinning)
		}
	}
}

// A run under a MinDuration says so in JSON, with each phase's
// operations per worker.
func TestRunMinDurationJSON(t *testing.T) {
	c := loadgen.Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "rwsem", Tree: sysfs.SynthConfig{CPUs: 4}},
		Threads: 2, Times: 1, MinDuration: 40 * time.Millisecond}
	r, err := loadgen.Run(context.Background(), c)
	require.NoError(t, err)
	j := NewJSONRun(r)
	if j.MinDurationNs != c.MinDuration.Nanoseconds() || j.Single.OpsPerWorker != float64(r.Single.Workers[0].Ops) ||
		j.Concur.OpsPerWorker != r.Concur.OpsPerWorker() {
		t.Errorf("JSON min_duration_ns %d, ops_per_worker %v and %v: want the result's", j.MinDurationNs, j.Single.OpsPerWorker, j.Concur.OpsPerWorker)
	}
}

// A run with a SimCost states it in its summary and its JSON.
func TestSimCostReported(t *testing.T) {
	c := loadgen.Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "rcu", SimCost: 5 * time.Microsecond}, Threads: 1, Times: 2000}
	slow, err := loadgen.Run(context.Background(), c)
	require.NoError(t, err)
	var seed bytes.Buffer
	require.NoError(t, WriteSummary(&seed, slow))
	if !strings.Contains(seed.String(), "+5.00us of work outside the lock per op") {
		t.Errorf("summary does not state the cost:\n%s", seed.String())
	}
	if got := NewJSONRun(slow).Target.SimCostNs; got == nil || *got != 5000 {
		t.Errorf("JSON sim_cost_ns: got %v, want 5000", got)
	}
}
