package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"

	"github.com/kernfsim/kernfsim/internal/goldenfile"
	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/harness"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// fixture is a Result with fixed figures: two workers on a 2-CPU machine,
// the first reading slower, with churn.
// testProvenance is a fixed build and machine.
var testProvenance = harness.Provenance{Program: "loadgen", Version: "v1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567",
	GoVersion: "go1.26.0", Kernel: "6.18.0", CPUModel: "Test CPU @ 2.00GHz", OnlineCPUs: 2, GOMAXPROCS: 2,
	Args: []string{"loadgen", "--sim", "--file", "a b"}, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

// testFlags names fields as cmd/loadgen does, by their flags.
func testFlags(field string) string {
	return map[string]string{"Times": "--times", "MinDuration": "--min-duration", "PinSingle": "--pin-single",
		"Repeats": "--repeats", "SimTimes": "--sim-times", "Threads": "--threads", "Locks": "--locks", "Ops": "--ops", "Format": "--format"}[field]
}

func fixture() loadgen.Result {
	us := time.Microsecond
	lat := harness.Latency{Count: 20000, Mean: 4 * us, P50: 3900 * time.Nanosecond, P99: 9 * us, P999: 20 * us, Max: 1200 * us}
	return loadgen.Result{Provenance: testProvenance, FieldNames: testFlags,
		Target: harness.Target{Kind: harness.TargetSim, Lock: "rwsem"}, Op: harness.OpOpenReadClose, Threads: 2, Times: 10000, CPUs: 2,
		Pinned: true, BufSize: 32, Files: []string{"devices/system/cpu/cpu0/topology/core_id"}, FilesPerOp: 1,
		ClockCostNs: 38,
		Single: loadgen.Phase{Ran: true, Workers: []loadgen.WorkerResult{{Worker: 0, CPU: 0, Ops: 10000, Total: 37802725 * time.Nanosecond}},
			Wall: 38 * time.Millisecond, Latency: harness.Latency{Count: 10000, Mean: 3780 * time.Nanosecond, P50: 3 * us, P99: 8 * us, P999: 15 * us, Max: 90 * us}},
		Concur: loadgen.Phase{Ran: true, Workers: []loadgen.WorkerResult{
			{Worker: 1, CPU: 1, Ops: 10000, Total: 40 * time.Millisecond},
			{Worker: 0, CPU: 0, Ops: 10000, Total: 42 * time.Millisecond}},
			Wall: 42 * time.Millisecond, Latency: lat},
		Churn:  &loadgen.ChurnResult{Rate: 100, Adds: 3, Removes: 2, Elapsed: 50 * time.Millisecond},
		Errors: []harness.ErrorCount{{Errno: syscall.ENOENT, Churn: true, Count: 17, Path: "devices/kernfsim/loadgen0/uevent"}},
	}
}

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

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// compareFixture is a CompareResult with fixed figures.
func compareFixture() loadgen.CompareResult {
	rows := []loadgen.Row{{Target: harness.Target{Kind: harness.TargetSim, Lock: "mutex"}}, {Target: harness.Target{Kind: harness.TargetSim, Lock: "rcu"}},
		{Target: harness.Target{Kind: harness.TargetPath, Dir: "/sys"}}}
	r := loadgen.CompareResult{Provenance: testProvenance, Ops: []string{"files", "missing"}, Threads: []int{1, 48}, Times: 2000, SimTimes: 20000,
		Repeats: 3, CPUs: 2, Pinned: true, Rows: rows, Elapsed: 61 * time.Second, FieldNames: testFlags}
	r.Cells = loadgen.NewCells(r)
	for i := range r.Cells {
		c := &r.Cells[i]
		base := time.Duration(100*(i%4+1)+50*(i/4)) * time.Nanosecond
		for rep := range 3 {
			per := base * time.Duration(c.Threads) * time.Duration(rep+2) / 2
			ops := int64(c.Threads) * 20000
			c.Runs = append(c.Runs, loadgen.CellRun{SinglePerOp: base, PerOp: per, WorkerPerOp: per * 9 / 10, P50: per, P99: 2 * per,
				NsPerOp: float64(per) / float64(c.Threads), Ops: ops, P999: 3 * per, Ratio: 0.9 * float64(per) / float64(base),
				OpsPerSec: 1e9 / float64(per), Efficiency: float64(base) * float64(c.Threads) / float64(min(c.Threads, 2)) / float64(per)})
		}
	}
	return r
}

func TestCompareReportsGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(io.Writer, loadgen.CompareResult) error
	}{{"compare_table.golden", WriteCompareTable}, {"compare.json.golden", WriteCompareJSON}, {"compare_bench.golden", WriteCompareBench}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.write(&b, compareFixture()))
			goldenfile.Check(t, tc.name, b.String())
		})
	}
}

// writersFixture is fixture with what two writers did: their changes'
// latency over the run and over each phase, and the lock's write side.
func writersFixture() loadgen.Result {
	r := fixture()
	us := time.Microsecond
	r.Churn = &loadgen.ChurnResult{Rate: 100, Writers: 2, Adds: 9, Removes: 8, Elapsed: 85 * time.Millisecond,
		Latency: harness.Latency{Count: 17, Mean: 40 * us, P50: 30 * us, P99: 900 * us, P999: 900 * us, Max: 900 * us}}
	r.Single.Writes = &harness.Latency{Count: 8, Mean: 20 * us, P50: 20 * us, P99: 60 * us, P999: 60 * us, Max: 60 * us}
	r.Concur.Writes = &harness.Latency{Count: 9, Mean: 60 * us, P50: 45 * us, P99: 900 * us, P999: 900 * us, Max: 900 * us}
	r.Concur.Lock = &loadgen.LockUse{Stats: locking.Stats{LockCounts: locking.LockCounts{ReadAcquisitions: 20000, ReadHeld: 30 * time.Millisecond, WriteAcquisitions: 12, WriteContended: 3, WriteWait: 50 * us, WriteHeld: 640 * us},
		HoldSampleEvery: 64, ReadSideCounted: true, CountersSwitchedOn: true},
		Wall: 42 * time.Millisecond}
	r.Errors = nil
	return r
}

func TestWritersReportsGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(io.Writer, loadgen.Result) error
	}{{"seed_writers.golden", WriteSeed}, {"run_writers.json.golden", WriteJSON}, {"bench_writers.golden", WriteBench}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.write(&b, writersFixture()))
			goldenfile.Check(t, tc.name, b.String())
		})
	}
}

// compareWritersFixture is compareFixture with a writer beside the
// readers of the sim rows.
func compareWritersFixture() loadgen.CompareResult {
	r := compareFixture()
	r.Writers, r.WriteRate = 1, 100
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Row.Target.Kind == harness.TargetPath {
			continue
		}
		for k := range c.Runs {
			run := &c.Runs[k]
			base := time.Duration(10*(i%4+1)+k) * time.Microsecond
			run.Writers, run.WriteChanges, run.WriteRate, run.WriteP50, run.WriteP99 = 1, 20, 99.5, base, 9*base
			run.LockCounted, run.LockRead, run.LockWrite, run.LockContended, run.LockWrites = true, 0.5, 0.002, 0.01, 21
		}
	}
	return r
}

func TestCompareWritersReportsGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(io.Writer, loadgen.CompareResult) error
	}{{"compare_writers_table.golden", WriteCompareTable}, {"compare_writers.json.golden", WriteCompareJSON}, {"compare_writers_bench.golden", WriteCompareBench}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.write(&b, compareWritersFixture()))
			goldenfile.Check(t, tc.name, b.String())
		})
	}
}

// syntheticCompare is a comparison of kernfsim and sim rows under mutex
// and rwsem, op missing at 1 and 48 threads on 2 CPUs, whose runs have
// the per-ops given (µs, one per repeat) by perOp[row][threads].
func syntheticCompare(perOp map[string]map[int][]float64) loadgen.CompareResult {
	r := loadgen.CompareResult{Ops: []string{"missing"}, Threads: []int{1, 48}, CPUs: 2, Repeats: 3, FieldNames: testFlags}
	for _, label := range []string{"kernfsim mutex", "kernfsim rwsem", "sim mutex", "sim rwsem"} {
		kind, lock, _ := strings.Cut(label, " ")
		row := loadgen.Row{Target: harness.Target{Kind: map[string]harness.TargetKind{"kernfsim": harness.TargetKernfsim, "sim": harness.TargetSim}[kind], Lock: lock}}
		r.Rows = append(r.Rows, row)
		for _, th := range r.Threads {
			c := loadgen.Cell{Row: row, Op: "missing", Threads: th}
			for _, us := range perOp[label][th] {
				d := time.Duration(us * float64(time.Microsecond))
				c.Runs = append(c.Runs, loadgen.CellRun{PerOp: d, SinglePerOp: d})
			}
			r.Cells = append(r.Cells, c)
		}
	}
	return r
}

var seedLike = map[string]map[int][]float64{
	"kernfsim mutex": {1: {46, 47, 48}, 48: {6300, 6400, 6500}},
	"kernfsim rwsem": {1: {45, 47, 49}, 48: {1100, 1170, 1200}},
	"sim mutex":      {1: {0.79, 0.80, 0.81}, 48: {47, 48, 49}},
	"sim rwsem":      {1: {0.60, 0.61, 0.62}, 48: {25, 26, 27}},
}

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
	c := rowCell(&r, harness.TargetKernfsim, "rwsem", "missing", 48)
	for i := range c.Runs {
		c.Runs[i].PerOp = c.Runs[i].PerOp / 1170 * 200
	}
	if _, v := seedVerdict(&r, harness.TargetKernfsim, seedFigure{"missing", 48, 48, 2139048 * time.Nanosecond, 160549 * time.Nanosecond}); v != "same direction, larger (seed: 48 CPUs, here 2)" {
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
	if c := rowCell(&r, harness.TargetSim, "mutex", "missing", 1); !flagged(r, *c) {
		t.Error("sim mutex threads=1 with --pin-single: not flagged")
	}
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

func TestSpreadAndUnresolved(t *testing.T) {
	r := compareFixture()
	c := r.Cell(1, "files", 1) // sim rcu: 150, 225, 300 ns against mutex's 100, 150, 200
	if sp := c.Spread(); sp.Min != 150 || sp.Median != 225 || sp.Max != 300 || sp.CI {
		t.Errorf("spread %+v, want 150/225/300 without a CI (3 runs)", sp)
	}
	if !r.Unresolved(*c) {
		t.Error("ranges 100-200 and 150-300 overlap: want unresolved")
	}
	for i := range c.Runs { // 750-1500 ns: clear of mutex's
		c.Runs[i].PerOp *= 5
	}
	if r.Unresolved(*c) {
		t.Error("ranges 100-200 and 750-1500 are apart: want resolved")
	}
	if m := r.Cell(0, "files", 1); r.Unresolved(*m) {
		t.Error("the mutex row is never unresolved against itself")
	}
	for range 4 { // 7 runs: benchmath gives a 95% confidence interval
		c.Runs = append(c.Runs, c.Runs[0])
	}
	if sp := c.Spread(); !sp.CI || sp.Lo > sp.Median || sp.Hi < sp.Median || sp.Lo < sp.Min || sp.Hi > sp.Max {
		t.Errorf("7 runs: spread %+v, want a CI around the median within min-max", sp)
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
		if cpu := res.GetConfig("cpu"); cpu != testProvenance.CPUModel || res.GetConfig("pkg") != harness.BenchPkg {
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

// A comparison written as JSON reads back into the same tables (the
// plot's round trip is package plot's test).
func TestReadCompareJSON(t *testing.T) {
	orig := compareFixture()
	orig.Rows[0].Target.Mount = &harness.Mount{Lock: "mutex", Transport: "devfuse", Permissions: "kernel"}
	orig.Rows[0].Target.Kind = harness.TargetKernfsim
	orig.Cells = loadgen.NewCells(orig)
	for i := range orig.Cells {
		orig.Cells[i].Runs = compareFixture().Cells[i].Runs
	}
	var j, table1, table2 bytes.Buffer
	require.NoError(t, WriteCompareJSON(&j, orig))
	back, err := ReadCompareJSON(&j)
	require.NoError(t, err)
	WriteCompareTable(&table1, orig)
	WriteCompareTable(&table2, back)
	if table1.String() != table2.String() {
		t.Errorf("table differs after a round trip:\n%s\nwant:\n%s", table2.String(), table1.String())
	}
	var w, wtable1, wtable2 bytes.Buffer
	WriteCompareJSON(&w, compareWritersFixture())
	wback, err := ReadCompareJSON(&w)
	WriteCompareTable(&wtable1, compareWritersFixture())
	WriteCompareTable(&wtable2, wback)
	if err != nil || wtable1.String() != wtable2.String() {
		t.Errorf("with writers: %v; the table differs after a round trip:\n%s\nwant:\n%s", err, wtable2.String(), wtable1.String())
	}
	var run bytes.Buffer
	WriteJSON(&run, fixture())
	if _, err := ReadCompareJSON(&run); err == nil || !strings.Contains(err.Error(), "a single run") {
		t.Errorf("a run's JSON: %v", err)
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

func TestPinText(t *testing.T) {
	for _, tc := range []struct {
		single, workers bool
		want            string
	}{
		{false, true, "single worker not pinned, workers pinned"},
		{true, true, "single worker and workers pinned"},
		{true, false, "single worker pinned, workers not pinned"},
		{false, false, "single worker and workers not pinned"},
	} {
		if got := PinText(tc.single, tc.workers); got != tc.want {
			t.Errorf("PinText(%v, %v) = %q, want %q", tc.single, tc.workers, got, tc.want)
		}
	}
}

// The comparison's header says the duration rule, the warm-up and the
// pinning; its JSON carries them, and the ops done, back.
func TestCompareHeaderAndJSONLength(t *testing.T) {
	r := compareFixture()
	r.MinDuration, r.WarmUp, r.SinglePinned = 200*time.Millisecond, 50*time.Millisecond, true
	for i := range r.Cells {
		for k := range r.Cells[i].Runs {
			run := &r.Cells[i].Runs[k]
			run.SingleOps, run.OpsPerWorker = 30000, float64(run.Ops)/float64(r.Cells[i].Threads)
		}
	}
	var b bytes.Buffer
	require.NoError(t, WriteCompareTable(&b, r))
	want := "loadgen compare: median per-op of 3 runs x at least 2000 ops per worker (sim: 20000) and 200ms a phase, " +
		"each row warmed up 50.0ms first, 2 CPUs, single worker and workers pinned, 1m1s\n"
	if first, _, _ := strings.Cut(b.String(), "\n"); first+"\n" != want {
		t.Errorf("header:\n got  %s\n want %s", first, want)
	}
	b.Reset()
	require.NoError(t, WriteCompareJSON(&b, r))
	back, err := ReadCompareJSON(&b)
	require.NoError(t, err)
	if back.MinDuration != r.MinDuration || back.WarmUp != r.WarmUp || !back.SinglePinned || !back.Pinned {
		t.Errorf("read back: min duration %v, warm-up %v, single pinned %v, pinned %v", back.MinDuration, back.WarmUp, back.SinglePinned, back.Pinned)
	}
	if got := back.Cells[0].Runs[0]; got.SingleOps != 30000 || got.OpsPerWorker != 20000 {
		t.Errorf("read back run: single ops %d, ops per worker %v: want 30000, 20000", got.SingleOps, got.OpsPerWorker)
	}
}

// A comparison saved before single_pinned existed pinned its single
// worker as its concur workers.
func TestReadCompareJSONBeforeSinglePinned(t *testing.T) {
	for _, pinned := range []bool{true, false} {
		doc := fmt.Sprintf(`{"schema": %q, "pinned": %v, "cells": []}`, SchemaCompare, pinned)
		r, err := ReadCompareJSON(strings.NewReader(doc))
		if err != nil || r.SinglePinned != pinned {
			t.Errorf("pinned %v: got single pinned %v, %v; want %v", pinned, r.SinglePinned, err, pinned)
		}
	}
}

// An efficiency above 1.05 where only the concur workers were pinned and a
// server answered may be the pinning's doing, and the warning says so.
func TestEfficiencyWarningPinning(t *testing.T) {
	for _, tc := range []struct {
		kind         harness.TargetKind
		singlePinned bool
		pinning      bool
	}{{harness.TargetKernfsim, false, true}, {harness.TargetPath, false, true}, {harness.TargetKernfsim, true, false}, {harness.TargetSim, false, false}} {
		r := fixture()
		r.Concur.Wall = r.Concur.Wall * 9 / 15 // efficiency 1.50
		r.Target.Kind, r.SinglePinned = tc.kind, tc.singlePinned
		w := r.Warnings()
		if len(w) != 1 || !strings.HasPrefix(w[0], "efficiency 1.50 is above 1.05") || strings.Contains(w[0], "--pin-single") != tc.pinning {
			t.Errorf("%s, single pinned %v: warnings %q, want the pinning named: %v", tc.kind, tc.singlePinned, w, tc.pinning)
		}
	}
}

// The compare header and JSON say which sim mode the sim rows ran in, and
// the bench names carry a sim row's cost.
func TestCompareSimMode(t *testing.T) {
	cal := loadgen.SimCalibration{Dir: "/sys", Op: "files", Lock: "rwsem", Real: 5600 * time.Nanosecond,
		Bare: 500 * time.Nanosecond, Cost: 5100 * time.Nanosecond}
	for _, tc := range []struct {
		mode   string
		costs  map[string]time.Duration
		cals   []loadgen.SimCalibration
		header string
		bench  string
	}{
		{"bare", nil, nil, "sim=bare (the tree's code alone", "target=sim/lock=mutex/op=files/"},
		{"fixed", map[string]time.Duration{"files": 2 * time.Microsecond, "missing": 2 * time.Microsecond}, nil,
			"sim=fixed (+2.00us of work outside the lock per op, and the kernel's shared writes)", "target=sim/lock=mutex/simcost=2000ns/shared=on/op=files/"},
		{"calibrated", map[string]time.Duration{"files": cal.Cost}, []loadgen.SimCalibration{cal},
			"sim=calibrated (files +5.10us of work outside the lock per op, and the kernel's shared writes: single thread against /sys less the sim under rwsem with those writes)",
			"target=sim/lock=mutex/simcost=5100ns/shared=on/op=files/"},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			r := compareFixture()
			r.SimCosts, r.SimCalibrations = tc.costs, tc.cals
			if got := r.SimMode(); got != tc.mode {
				t.Errorf("SimMode() = %q, want %q", got, tc.mode)
			}
			var table, js, bench bytes.Buffer
			for _, err := range []error{WriteCompareTable(&table, r), WriteCompareJSON(&js, r), WriteCompareBench(&bench, r)} {
				require.NoError(t, err)
			}
			if !strings.Contains(table.String(), tc.header) {
				t.Errorf("table header lacks %q:\n%s", tc.header, table.String())
			}
			if !strings.Contains(bench.String(), tc.bench) {
				t.Errorf("bench lines lack %q:\n%s", tc.bench, bench.String())
			}
			var j JSONCompare
			require.NoError(t, json.Unmarshal(js.Bytes(), &j))
			if j.SimMode != tc.mode || j.SimCostsNs["files"] != tc.costs["files"].Nanoseconds() || len(j.SimCalibrations) != len(tc.cals) {
				t.Errorf("JSON: got mode %q, files cost %dns, %d calibrations; want %q, %v, %d",
					j.SimMode, j.SimCostsNs["files"], len(j.SimCalibrations), tc.mode, tc.costs["files"], len(tc.cals))
			}
		})
	}
}

// With writers, every cell of a row that takes them reports the writers'
// latency per change and the lock's write side; a row whose lock refuses
// writers runs readers only, with a note; the tables and the JSON say so.
func TestCompareWriters(t *testing.T) {
	tree := sysfs.SynthConfig{CPUs: 4}
	cc := loadgen.CompareConfig{
		Rows: []loadgen.Row{{Target: harness.Target{Kind: harness.TargetSim, Lock: "mutex", Tree: tree}}, {Target: harness.Target{Kind: harness.TargetSim, Lock: "rcu", Tree: tree}},
			{Target: harness.Target{Kind: harness.TargetSim, Lock: "none", Tree: tree}}},
		Ops: []string{"files", "cgroup"}, Threads: []int{1, 2}, Times: 20, SimTimes: 50, Repeats: 1,
		MinDuration: 100 * time.Millisecond, WarmUp: -1, Writers: 1, WriteRate: 2000,
	}
	r, err := loadgen.Compare(context.Background(), cc)
	require.NoError(t, err)
	if r.Writers != 1 || r.WriteRate != 2000 || !slices.Contains(r.Notes, "sim none: no writers: lock strategy none refuses them; readers only") {
		t.Errorf("writers %d at %g/s, notes %q", r.Writers, r.WriteRate, r.Notes)
	}
	for _, c := range r.Cells {
		m := c.Median()
		if c.Row.Target.Lock == "none" {
			if m.Writers != 0 || m.Unexpected != 0 {
				t.Errorf("cell %s %s threads=%d: %d writers, %d unexpected: want readers only", c.Row.Label(), c.Op, c.Threads, m.Writers, m.Unexpected)
			}
			continue
		}
		if m.Writers != 1 || m.WriteChanges == 0 || m.WriteP50 <= 0 || m.WriteP99 < m.WriteP50 || m.WriteRate <= 0 ||
			!m.LockCounted || m.LockWrites == 0 || m.Unexpected != 0 {
			t.Errorf("cell %s %s threads=%d: %+v: want the writer's changes, their latency and the lock's write side", c.Row.Label(), c.Op, c.Threads, m)
		}
	}
	var table, js bytes.Buffer
	require.NoError(t, WriteCompareTable(&table, r))
	for _, want := range []string{"writers: 1 per cell beside the readers, 2000 changes/s each", "\nwriters   lock", "rows' writers at 2 threads"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	require.NoError(t, WriteCompareJSON(&js, r))
	var j JSONCompare
	if err := json.Unmarshal(js.Bytes(), &j); err != nil || j.Writers != 1 || j.Cells[0].Median.Writers == nil || j.Cells[0].Median.Lock.WriteAcquisitions == 0 {
		t.Errorf("json: %v, writers %d, first cell %+v", err, j.Writers, j.Cells[0].Median)
	}
}

// The header of a comparison with sys rows says their ops per worker
// (CompareConfig.SysTimes).
func TestSysTimesHeader(t *testing.T) {
	r := compareFixture()
	r.SysTimes = 20000
	var b bytes.Buffer
	WriteCompareTable(&b, r)
	if !strings.Contains(b.String(), "(sim: 20000, sys: 20000)") {
		t.Errorf("header lacks the sys rows' ops:\n%.200s", b.String())
	}
}

// A run under a MinDuration says so in JSON, with each phase's
// operations per worker.
func TestRunMinDurationJSON(t *testing.T) {
	c := loadgen.Config{Target: harness.Target{Kind: harness.TargetSim, Lock: "rwsem", Tree: sysfs.SynthConfig{CPUs: 4}},
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
	c := loadgen.Config{Target: harness.Target{Kind: harness.TargetSim, Lock: "rcu", SimCost: 5 * time.Microsecond}, Threads: 1, Times: 2000}
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

// A calibration of 0 (the sim's own part as slow as the real call) still
// makes the writes, and the cell's name says so.
func TestSimCostZeroSharedWrites(t *testing.T) {
	r := compareFixture()
	r.SimCosts = map[string]time.Duration{"files": 0}
	for _, c := range r.Cells {
		if c.Row.Target.Kind != harness.TargetSim {
			continue
		}
		ct := r.CellTarget(c)
		if c.Op == "files" && !ct.SimSharedWrites() {
			t.Errorf("a cell calibrated to 0: target %+v makes no shared writes", ct)
		}
		if name := benchName(ct, harness.OpOpenReadClose, false, 2); c.Op == "files" && !strings.Contains(name, "/shared=on/") {
			t.Errorf("a cell calibrated to 0: bench name %q does not say shared=on", name)
		}
	}
}
