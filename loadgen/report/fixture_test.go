package report

import (
	"bytes"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/goldenfile"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
)

// fixture is a Result with fixed figures: two workers on a 2-CPU machine,
// the first reading slower, with churn.
// testProvenance is a fixed build and machine.
var testProvenance = provenance.Provenance{Program: "loadgen", Version: "v1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567",
	GoVersion: "go1.26.0", Kernel: "6.18.0", CPUModel: "Test CPU @ 2.00GHz", OnlineCPUs: 2, GOMAXPROCS: 2,
	Args: []string{"loadgen", "--sim", "--file", "a b"}, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

// testFlags names fields as cmd/loadgen does, by their flags.
func testFlags(field string) string {
	return map[string]string{"Times": "--times", "MinDuration": "--min-duration", "PinSingle": "--pin-single",
		"Repeats": "--repeats", "SimTimes": "--sim-times", "Threads": "--threads", "Locks": "--locks", "Ops": "--ops", "Format": "--format"}[field]
}

func fixture() loadgen.Result {
	us := time.Microsecond
	lat := latency.Latency{Count: 20000, Mean: 4 * us, P50: 3900 * time.Nanosecond, P99: 9 * us, P999: 20 * us, Max: 1200 * us}
	return loadgen.Result{Provenance: testProvenance, FieldNames: testFlags,
		Target: targets.Target{Kind: targets.TargetSim, Lock: "rwsem"}, Op: workload.OpOpenReadClose, Threads: 2, Times: 10000, CPUs: 2,
		Pinned: true, BufSize: 32, Files: []string{"devices/system/cpu/cpu0/topology/core_id"}, FilesPerOp: 1,
		ClockCostNs: 38,
		Single: loadgen.Phase{Ran: true, Workers: []loadgen.WorkerResult{{Worker: 0, CPU: 0, Ops: 10000, Total: 37802725 * time.Nanosecond}},
			Wall: 38 * time.Millisecond, Latency: latency.Latency{Count: 10000, Mean: 3780 * time.Nanosecond, P50: 3 * us, P99: 8 * us, P999: 15 * us, Max: 90 * us}},
		Concur: loadgen.Phase{Ran: true, Workers: []loadgen.WorkerResult{
			{Worker: 1, CPU: 1, Ops: 10000, Total: 40 * time.Millisecond},
			{Worker: 0, CPU: 0, Ops: 10000, Total: 42 * time.Millisecond}},
			Wall: 42 * time.Millisecond, Latency: lat},
		Churn:  &loadgen.ChurnResult{Rate: 100, Adds: 3, Removes: 2, Elapsed: 50 * time.Millisecond},
		Errors: []errtally.ErrorCount{{Errno: syscall.ENOENT, Churn: true, Count: 17, Path: "devices/kernfsim/loadgen0/uevent"}},
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
	rows := []loadgen.Row{{Target: targets.Target{Kind: targets.TargetSim, Lock: "mutex"}}, {Target: targets.Target{Kind: targets.TargetSim, Lock: "rcu"}},
		{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}}}
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

// writersFixture is fixture with what two writers did: their changes'
// latency over the run and over each phase, and the lock's write side.
func writersFixture() loadgen.Result {
	r := fixture()
	us := time.Microsecond
	r.Churn = &loadgen.ChurnResult{Rate: 100, Writers: 2, Adds: 9, Removes: 8, Elapsed: 85 * time.Millisecond,
		Latency: latency.Latency{Count: 17, Mean: 40 * us, P50: 30 * us, P99: 900 * us, P999: 900 * us, Max: 900 * us}}
	r.Single.Writes = &latency.Latency{Count: 8, Mean: 20 * us, P50: 20 * us, P99: 60 * us, P999: 60 * us, Max: 60 * us}
	r.Concur.Writes = &latency.Latency{Count: 9, Mean: 60 * us, P50: 45 * us, P99: 900 * us, P999: 900 * us, Max: 900 * us}
	r.Concur.Lock = &loadgen.LockUse{Stats: locking.Stats{LockCounts: locking.LockCounts{ReadAcquisitions: 20000, ReadHeld: 30 * time.Millisecond, WriteAcquisitions: 12, WriteContended: 3, WriteWait: 50 * us, WriteHeld: 640 * us},
		HoldSampleEvery: 64, ReadSideCounted: true, CountersSwitchedOn: true},
		Wall: 42 * time.Millisecond}
	r.Errors = nil
	return r
}

// compareWritersFixture is compareFixture with a writer beside the
// readers of the sim rows.
func compareWritersFixture() loadgen.CompareResult {
	r := compareFixture()
	r.Writers, r.WriteRate = 1, 100
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Row.Target.Kind == targets.TargetPath {
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

// syntheticCompare is a comparison of kernfsim and sim rows under mutex
// and rwsem, op missing at 1 and 48 threads on 2 CPUs, whose runs have
// the per-ops given (µs, one per repeat) by perOp[row][threads].
func syntheticCompare(perOp map[string]map[int][]float64) loadgen.CompareResult {
	r := loadgen.CompareResult{Ops: []string{"missing"}, Threads: []int{1, 48}, CPUs: 2, Repeats: 3, FieldNames: testFlags}
	for _, label := range []string{"kernfsim mutex", "kernfsim rwsem", "sim mutex", "sim rwsem"} {
		kind, lock, _ := strings.Cut(label, " ")
		row := loadgen.Row{Target: targets.Target{Kind: map[string]targets.TargetKind{"kernfsim": targets.TargetKernfsim, "sim": targets.TargetSim}[kind], Lock: lock}}
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

// golden is one writer's golden file.
type golden[R any] struct {
	name  string
	write func(io.Writer, R) error
}

// checkGolden writes r with each writer and compares the output with its
// golden file, one subtest per file.
func checkGolden[R any](t *testing.T, r func() R, files ...golden[R]) {
	t.Helper()
	for _, g := range files {
		t.Run(g.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, g.write(&b, r()))
			goldenfile.Check(t, g.name, b.String())
		})
	}
}
