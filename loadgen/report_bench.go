package loadgen

import (
	"fmt"
	"io"
	"runtime"
)

// BenchName is the benchmark name prefix of WriteBench's lines.
const BenchName = "BenchmarkSysfs"

// WriteBench writes r as one Go benchmark line, with a header benchstat
// reads:
//
//	BenchmarkSysfs/target=sim/lock=rwsem/op=files/threads=48  10000  21530 ns/op  ...
//
// ns/op is the concur phase's wall per-op (Result.WallPerOp); the other
// metrics are the workers' own per-op (worker-ns/op, the seed's "per"),
// the single per-op (single-ns/op), concur latency percentiles (p50-ns,
// p99-ns, p99.9-ns), throughput (ops/s), the concur/single ratio and
// scaling efficiency; hwloc and lstopo lines add the median and the
// largest worker time to done (done-ns, done-max-ns).
// The iteration count is Times: operations per worker.
func WriteBench(w io.Writer, r Result) error {
	if err := writeBenchHeader(w); err != nil {
		return err
	}
	return writeBenchLine(w, r)
}

func writeBenchHeader(w io.Writer) error {
	_, err := fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/kernfsim/kernfsim/loadgen\n", runtime.GOOS, runtime.GOARCH)
	return err
}

// benchName is r's benchmark name with key=value parts, so that
// `benchstat -col /lock` compares strategies.
func benchName(t Target, r Result) string {
	lock := t.Lock
	if t.Kind == TargetPath {
		lock = "host"
	}
	return fmt.Sprintf("%s/target=%s/lock=%s/op=%s/threads=%d", BenchName, targetLabel(t), lock, opLabel(r.Op, r.Missing), r.Threads)
}

func writeBenchLine(w io.Writer, r Result) error {
	if !r.Concur.Ran || len(r.Concur.Workers) == 0 {
		return nil
	}
	l := r.Concur.Latency
	done := ""
	if r.Op == OpHwloc || r.Op == OpLstopo {
		med, last := r.TimeToDone()
		done = fmt.Sprintf("\t%d done-ns\t%d done-max-ns", int64(med), int64(last))
	}
	_, err := fmt.Fprintf(w, "%s\t%d\t%.1f ns/op\t%.1f worker-ns/op\t%.1f single-ns/op\t%d p50-ns\t%d p99-ns\t%d p99.9-ns\t%.0f ops/s\t%.3f ratio\t%.3f efficiency%s\n",
		benchName(r.Target, r), iterations(r), nsOf(r.WallPerOp()), nsOf(r.ConcurPerOp()), nsOf(r.SinglePerOp()),
		int64(l.P50), int64(l.P99), int64(l.P999), r.OpsPerSec(), r.Ratio(), r.Efficiency(), done)
	return err
}

// targetLabel is the target's name in benchmark keys and tables: sim,
// kernfsim, sys for /sys, path for another directory.
func targetLabel(t Target) string {
	if t.Kind == TargetPath && (t.Dir == "/sys" || t.Dir == "/sys/") {
		return "sys"
	}
	return string(t.Kind)
}

// opLabel is the operation's name in benchmark keys: files for the
// original open-read-close, missing for it on a missing path.
func opLabel(op Op, missing bool) string {
	switch {
	case missing && op == OpStat:
		return "stat-missing"
	case missing:
		return "missing"
	case op == OpOpenReadClose:
		return "files"
	}
	return string(op)
}

// iterations is the benchmark line's iteration count: operations per
// worker, the fewest any worker did when the run was interrupted.
func iterations(r Result) int64 {
	n := int64(r.Times)
	for _, w := range r.Concur.Workers {
		n = min(n, w.Ops)
	}
	return n
}
