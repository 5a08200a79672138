package loadgen

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/goldenfile"
	"github.com/kernfsim/kernfsim/locking"
)

// fixture is a Result with fixed figures: two workers on a 2-CPU machine,
// the first reading slower, with churn.
// testProvenance is a fixed build and machine.
var testProvenance = Provenance{Program: "loadgen", Version: "v1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567",
	GoVersion: "go1.26.0", Kernel: "6.18.0", CPUModel: "Test CPU @ 2.00GHz", OnlineCPUs: 2, GOMAXPROCS: 2,
	Args: []string{"loadgen", "--sim", "--file", "a b"}, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

func fixture() Result {
	us := time.Microsecond
	lat := Latency{Count: 20000, Mean: 4 * us, P50: 3900 * time.Nanosecond, P99: 9 * us, P999: 20 * us, Max: 1200 * us}
	return Result{Provenance: testProvenance,
		Target: Target{Kind: TargetSim, Lock: "rwsem"}, Op: OpOpenReadClose, Threads: 2, Times: 10000, CPUs: 2,
		Pinned: true, BufSize: 32, Files: []string{"devices/system/cpu/cpu0/topology/core_id"}, FilesPerOp: 1,
		ClockCostNs: 38,
		Single: Phase{Ran: true, Workers: []WorkerResult{{Worker: 0, CPU: 0, Ops: 10000, Total: 37802725 * time.Nanosecond}},
			Wall: 38 * time.Millisecond, Latency: Latency{Count: 10000, Mean: 3780 * time.Nanosecond, P50: 3 * us, P99: 8 * us, P999: 15 * us, Max: 90 * us}},
		Concur: Phase{Ran: true, Workers: []WorkerResult{
			{Worker: 1, CPU: 1, Ops: 10000, Total: 40 * time.Millisecond},
			{Worker: 0, CPU: 0, Ops: 10000, Total: 42 * time.Millisecond}},
			Wall: 42 * time.Millisecond, Latency: lat},
		Churn:  &ChurnResult{Rate: 100, Adds: 3, Removes: 2, Elapsed: 50 * time.Millisecond},
		Errors: []ErrorCount{{Errno: syscall.ENOENT, Churn: true, Count: 17, Path: "devices/kernfsim/loadgen0/uevent"}},
	}
}

func TestWriteSeedGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSeed(&b, fixture()); err != nil {
		t.Fatal(err)
	}
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
	if err := WriteJSON(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "run.json.golden", b.String())
	var j JSONRun
	if err := json.Unmarshal(b.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if j.Schema != SchemaRun || len(j.Concur.Workers) != 2 || j.Errors[0].Errno != "ENOENT" || !j.Errors[0].Expected {
		t.Errorf("round trip: %+v", j)
	}
}

func TestWriteBenchGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteBench(&b, fixture()); err != nil {
		t.Fatal(err)
	}
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
func compareFixture() CompareResult {
	rows := []Row{{Target{Kind: TargetSim, Lock: "mutex"}}, {Target{Kind: TargetSim, Lock: "rcu"}},
		{Target{Kind: TargetPath, Dir: "/sys"}}}
	r := CompareResult{Provenance: testProvenance, Ops: []string{"files", "missing"}, Threads: []int{1, 48}, Times: 2000, SimTimes: 20000,
		Repeats: 3, CPUs: 2, Pinned: true, Rows: rows, Elapsed: 61 * time.Second}
	r.Cells = makeCells(r)
	for i := range r.Cells {
		c := &r.Cells[i]
		base := time.Duration(100*(i%4+1)+50*(i/4)) * time.Nanosecond
		for rep := range 3 {
			per := base * time.Duration(c.Threads) * time.Duration(rep+2) / 2
			ops := int64(c.Threads) * 20000
			c.Runs = append(c.Runs, CellRun{SinglePerOp: base, PerOp: per, WorkerPerOp: per * 9 / 10, P50: per, P99: 2 * per,
				NsPerOp: float64(per) / float64(c.Threads), Ops: ops, P999: 3 * per, Ratio: 0.9 * float64(per) / float64(base),
				OpsPerSec: 1e9 / float64(per), Efficiency: float64(base) * float64(c.Threads) / float64(min(c.Threads, 2)) / float64(per)})
		}
	}
	return r
}

func TestCompareReportsGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(io.Writer, CompareResult) error
	}{{"compare_table.golden", WriteCompareTable}, {"compare.json.golden", WriteCompareJSON}, {"compare_bench.golden", WriteCompareBench}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, compareFixture()); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, tc.name, b.String())
		})
	}
}

func TestComparePlot(t *testing.T) {
	var b bytes.Buffer
	if err := WriteComparePlot(&b, compareFixture(), "svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "op=files", "op=missing", "sim mutex", "sim rcu", "sys", "threads"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plot lacks %q", want)
		}
	}
}

func TestCellMedian(t *testing.T) {
	c := Cell{Runs: []CellRun{{PerOp: 3}, {PerOp: 1}, {PerOp: 2}}}
	if got := c.Median().PerOp; got != 2 {
		t.Errorf("median of 3, 1, 2: got %v, want 2", got)
	}
	c.Runs = append(c.Runs, CellRun{PerOp: 10})
	if got := c.Median().PerOp; got != 2 { // (2+3)/2 truncated to ns
		t.Errorf("median of 1, 2, 3, 10: got %v, want 2", got)
	}
}

// writersFixture is fixture with what two writers did: their changes'
// latency over the run and over each phase, and the lock's write side.
func writersFixture() Result {
	r := fixture()
	us := time.Microsecond
	r.Churn = &ChurnResult{Rate: 100, Writers: 2, Adds: 9, Removes: 8, Elapsed: 85 * time.Millisecond,
		Latency: Latency{Count: 17, Mean: 40 * us, P50: 30 * us, P99: 900 * us, P999: 900 * us, Max: 900 * us}}
	r.Single.Writes = &Latency{Count: 8, Mean: 20 * us, P50: 20 * us, P99: 60 * us, P999: 60 * us, Max: 60 * us}
	r.Concur.Writes = &Latency{Count: 9, Mean: 60 * us, P50: 45 * us, P99: 900 * us, P999: 900 * us, Max: 900 * us}
	r.Concur.Lock = &LockUse{Stats: locking.Stats{LockCounts: locking.LockCounts{ReadAcquisitions: 20000, ReadHeld: 30 * time.Millisecond, WriteAcquisitions: 12, WriteContended: 3, WriteWait: 50 * us, WriteHeld: 640 * us},
		HoldSampleEvery: 64, ReadSideCounted: true, CountersSwitchedOn: true},
		Wall: 42 * time.Millisecond}
	r.Errors = nil
	return r
}

func TestWritersReportsGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(io.Writer, Result) error
	}{{"seed_writers.golden", WriteSeed}, {"run_writers.json.golden", WriteJSON}, {"bench_writers.golden", WriteBench}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, writersFixture()); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, tc.name, b.String())
		})
	}
}

// compareWritersFixture is compareFixture with a writer beside the
// readers of the sim rows.
func compareWritersFixture() CompareResult {
	r := compareFixture()
	r.Writers, r.WriteRate = 1, 100
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Row.Target.Kind == TargetPath {
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
		write func(io.Writer, CompareResult) error
	}{{"compare_writers_table.golden", WriteCompareTable}, {"compare_writers.json.golden", WriteCompareJSON}, {"compare_writers_bench.golden", WriteCompareBench}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, compareWritersFixture()); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, tc.name, b.String())
		})
	}
}
