package report

import (
	"fmt"
	"io"

	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/gobench"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
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
// are rounded as go test rounds them (gobench.Round).
func WriteBench(w io.Writer, r loadgen.Result) error {
	gw := provenance.BenchWriter(w, r.Provenance)
	gw.Comment("setup: %s", r.Target.Describe())
	for _, warn := range r.Warnings() {
		gw.Comment("warning: %s", warn)
	}
	if r.Concur.Ran && len(r.Concur.Workers) > 0 {
		writeBenchLine(gw, r.Provenance, benchName(r.Target, r.Op, r.Missing, r.Threads), r.Op, loadgen.CellRunOf(r))
	}
	return gw.Err()
}

// writeBenchLine writes one benchmark line: name with the -N GOMAXPROCS
// suffix, every worker's operations, then the metrics.
func writeBenchLine(gw *gobench.Writer, p provenance.Provenance, name string, op workload.Op, c loadgen.CellRun) {
	m := []gobench.Metric{gobench.M(c.NsPerOp, "ns/op"), gobench.M(float64(c.WorkerPerOp), "worker-ns/op"),
		gobench.M(float64(c.SinglePerOp), "single-ns/op"),
		gobench.M(float64(c.P50), "p50-ns"), gobench.M(float64(c.P99), "p99-ns"), gobench.M(float64(c.P999), "p99.9-ns"),
		gobench.M(c.OpsPerSec, "ops/s"), gobench.M(c.Ratio, "ratio"), gobench.M(c.Efficiency, "efficiency")}
	if op == workload.OpHwloc || op == workload.OpLstopo {
		m = append(m, gobench.M(float64(c.Done), "done-ns"), gobench.M(float64(c.DoneMax), "done-max-ns"))
	}
	if c.LockCounted {
		m = append(m, gobench.M(c.LockRead, "lock-read-util"), gobench.M(c.LockWrite, "lock-write-util"),
			gobench.M(c.LockContended, "lock-contended"))
	}
	if c.Writers > 0 {
		m = append(m, gobench.M(float64(c.WriteP50), "write-p50-ns"), gobench.M(float64(c.WriteP99), "write-p99-ns"),
			gobench.M(c.WriteRate, "writes/s"))
	}
	gw.Line(fmt.Sprintf("%s-%d", name, max(1, p.GOMAXPROCS)), int(c.Ops), m...)
}

// benchName is the benchmark name with key=value parts, so that
// `benchstat -col /lock` compares strategies; without the -N suffix. A
// sim with work outside the lock (Target.SimCost) adds
// simcost=NANOSECONDSns after the lock, and one that makes the kernel's
// shared writes (every sim with a cost, and a calibration's of 0)
// shared=on; a bare sim adds nothing.
func benchName(t targets.Target, op workload.Op, missing bool, threads int) string {
	lock := t.Lock
	if t.Kind == targets.TargetPath {
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
