package report

import (
	"fmt"
	"io"
	"math"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/harness"
)

// BenchName is the benchmark name prefix of WriteBench's lines.
const BenchName = "BenchmarkSysfs"

// WriteBench writes r as one Go benchmark line, after the header go test
// prints (goos, goarch, pkg, cpu) and comment lines benchstat ignores: the
// build, the machine, the command line, the target's setup and any
// warnings.
//
//	BenchmarkSysfs/target=sim/lock=rwsem/op=files/threads=48-2  480000  449.2 ns/op  21530 worker-ns/op ...
//
// As with b.RunParallel, the iteration count is every worker's operations
// together. ns/op is the concur phase's wall time over them, the
// reciprocal of ops/s. The -N suffix is GOMAXPROCS when the run began.
// The other metrics are:
//
//   - the workers' own mean per-op (worker-ns/op, the seed's "per");
//   - the single phase's per-op (single-ns/op);
//   - concur latency percentiles (p50-ns, p99-ns, p99.9-ns);
//   - throughput (ops/s), the concur/single ratio and the scaling
//     efficiency;
//   - for hwloc and lstopo, the median and the largest worker time to
//     done (done-ns, done-max-ns);
//   - where the target has lock counters, each side's utilization over
//     the concur phase (lock-read-util, lock-write-util, held over wall)
//     and the fraction of acquisitions that waited (lock-contended);
//   - where writers ran, the median and p99 of one change (write-p50-ns,
//     write-p99-ns) and the changes a second (writes/s).
//
// WriteCompareBench writes the same metrics, a line per repeat. Figures
// are printed as go test prints them.
func WriteBench(w io.Writer, r loadgen.Result) error {
	ew := textout.NewWriter(w)
	harness.WriteBenchProvenance(ew, r.Provenance)
	ew.Printf("# setup: %s\n", r.Target.Describe())
	for _, warn := range r.Warnings() {
		ew.Printf("# warning: %s\n", warn)
	}
	if r.Concur.Ran && len(r.Concur.Workers) > 0 {
		writeBenchLine(ew, r.Provenance, benchName(r.Target, r.Op, r.Missing, r.Threads), r.Op, loadgen.CellRunOf(r))
	}
	return ew.Err()
}

// writeBenchLine writes one benchmark line: name with the -N GOMAXPROCS
// suffix, every worker's operations, then the metrics.
func writeBenchLine(ew *textout.Writer, p harness.Provenance, name string, op harness.Op, c loadgen.CellRun) {
	ew.Printf("%s-%d\t%8d", name, max(1, p.GOMAXPROCS), c.Ops)
	m := [][2]any{{c.NsPerOp, "ns/op"}, {float64(c.WorkerPerOp), "worker-ns/op"}, {float64(c.SinglePerOp), "single-ns/op"},
		{float64(c.P50), "p50-ns"}, {float64(c.P99), "p99-ns"}, {float64(c.P999), "p99.9-ns"},
		{c.OpsPerSec, "ops/s"}, {c.Ratio, "ratio"}, {c.Efficiency, "efficiency"}}
	if op == harness.OpHwloc || op == harness.OpLstopo {
		m = append(m, [2]any{float64(c.Done), "done-ns"}, [2]any{float64(c.DoneMax), "done-max-ns"})
	}
	if c.LockCounted {
		m = append(m, [2]any{c.LockRead, "lock-read-util"}, [2]any{c.LockWrite, "lock-write-util"}, [2]any{c.LockContended, "lock-contended"})
	}
	if c.Writers > 0 {
		m = append(m, [2]any{float64(c.WriteP50), "write-p50-ns"}, [2]any{float64(c.WriteP99), "write-p99-ns"}, [2]any{c.WriteRate, "writes/s"})
	}
	for _, v := range m {
		ew.Printf(benchFormat(v[0].(float64)), v[0], v[1])
	}
	ew.Printf("\n")
}

// benchFormat is the format go test's testing package prints a metric
// with: whole numbers from 1000 up, four significant figures below.
func benchFormat(x float64) string {
	switch y := math.Abs(x); {
	case y == 0 || y >= 999.95:
		return "\t%10.0f %s"
	case y >= 99.995:
		return "\t%12.1f %s"
	case y >= 9.9995:
		return "\t%13.2f %s"
	case y >= 0.99995:
		return "\t%14.3f %s"
	case y >= 0.099995:
		return "\t%15.4f %s"
	}
	return "\t%16.5f %s"
}

// benchName is the benchmark name with key=value parts, so that
// `benchstat -col /lock` compares strategies; without the -N suffix. A
// sim with work outside the lock (Target.SimCost) adds
// simcost=NANOSECONDSns after the lock, and one that makes the kernel's
// shared writes (every sim with a cost, and a calibration's of 0)
// shared=on; a bare sim adds nothing.
func benchName(t harness.Target, op harness.Op, missing bool, threads int) string {
	lock := t.Lock
	if t.Kind == harness.TargetPath {
		lock = "host"
	}
	cost := ""
	if t.SimCost > 0 {
		cost = fmt.Sprintf("/simcost=%dns", t.SimCost.Nanoseconds())
	}
	if t.SimSharedWrites() {
		cost += "/shared=on"
	}
	return fmt.Sprintf("%s/target=%s/lock=%s%s/op=%s/threads=%d", BenchName, t.Label(), lock, cost, loadgen.OpLabel(op, missing), threads)
}
