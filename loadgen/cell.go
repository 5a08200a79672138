package loadgen

import (
	"math"
	"slices"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
)

// A comparison's cells: the runs of one row, op and thread count, their
// medians and spread, and their ratio to the baseline's (locking.Baseline).

// Cell is the runs of one row, op and thread count.
type Cell struct {
	Row     Row
	Op      string
	Threads int
	Runs    []CellRun // one per repeat done, in order
}

// CellRun is one run's figures.
type CellRun struct {
	SinglePerOp time.Duration
	PerOp       time.Duration // concur wall per-op (Result.WallPerOp)
	WorkerPerOp time.Duration // the workers' own per-op (Result.ConcurPerOp)
	NsPerOp     float64       // concur wall over all operations (Result.NsPerOp), Go's ns/op
	Ops         int64         // the concur phase's operations, every worker's
	P50, P99    time.Duration
	P999        time.Duration
	OpsPerSec   float64
	Ratio       float64 // concur/single (Result.Ratio)
	Efficiency  float64
	Unexpected  int64
	// OpsPerWorker is the concur phase's mean operations per worker, and
	// SingleOps the single worker's: Times, or more where MinDuration
	// extended the phase.
	OpsPerWorker float64
	SingleOps    int64
	// Lock is how busy the target's lock was over the concur phase
	// (Phase.Lock): each side's utilization (held over wall) and the
	// fraction of acquisitions that waited. LockCounted is false for a
	// target without lock counters (the real /sys).
	LockRead, LockWrite, LockContended float64
	LockCounted                        bool
	// LockReadUncounted: the strategy's readers take nothing (none), so
	// LockRead says nothing.
	LockReadUncounted bool
	// Done and DoneMax are the median and the largest of the concur
	// workers' time to done (WorkerResult.Done): the figure of hwloc
	// cells, the start-up wait of half and of all MPI ranks.
	Done, DoneMax time.Duration
	Warnings      []string // Result.Warnings
	// Writers is how many writers ran beside the readers (0: none). Over
	// the concur phase they made WriteChanges changes, WriteRate a second
	// in all, one taking WriteP50 (median) and WriteP99 as its writer saw
	// it (Phase.Writes). LockWrites is the write side's acquisitions over
	// the phase, exact (LockWrite's hold times are sampled).
	Writers            int
	WriteChanges       int64
	WriteRate          float64
	WriteP50, WriteP99 time.Duration
	LockWrites         int64
	// LockUse is the concur phase's lock counters, nil without: what
	// CompareResult.Binding prices. Files is how many distinct files
	// the run's operations read (Result.Files).
	LockUse *LockUse
	Files   int
}

// CellRunOf is r's figures.
func CellRunOf(r Result) CellRun {
	done, last := r.TimeToDone()
	var single int64
	if len(r.Single.Workers) > 0 {
		single = r.Single.Workers[0].Ops
	}
	c := CellRun{SinglePerOp: r.SinglePerOp(), PerOp: r.WallPerOp(), WorkerPerOp: r.ConcurPerOp(),
		NsPerOp: r.NsPerOp(), Ops: r.TotalOps(), OpsPerWorker: r.Concur.OpsPerWorker(), SingleOps: single,
		P50: r.Concur.Latency.P50, P99: r.Concur.Latency.P99,
		P999: r.Concur.Latency.P999, OpsPerSec: r.OpsPerSec(), Ratio: r.Ratio(), Efficiency: r.Efficiency(),
		Unexpected: r.Unexpected(), Done: done, DoneMax: last, Warnings: r.Warnings(), Files: len(r.Files)}
	if u := r.Concur.Lock; u != nil {
		c.LockCounted, c.LockContended, c.LockWrites = true, u.Contended(), u.WriteAcquisitions
		c.LockRead, c.LockWrite = u.Utilization()
		c.LockReadUncounted = !u.ReadSideCounted
		c.LockUse = u
	}
	if w := r.Concur.Writes; w != nil && r.Churn != nil {
		c.Writers, c.WriteChanges, c.WriteP50, c.WriteP99 = max(1, r.Churn.Writers), w.Count, w.P50, w.P99
		if r.Concur.Wall > 0 {
			c.WriteRate = float64(w.Count) / r.Concur.Wall.Seconds()
		}
	}
	return c
}

// Figure is the run's headline figure for op: Done for hwloc and lstopo,
// PerOp otherwise.
func (c CellRun) Figure(op string) time.Duration {
	if TimeToDoneOp(op) {
		return c.Done
	}
	return c.PerOp
}

// Median is the median of each figure over the cell's runs, and every
// run's unexpected errors and warnings.
func (c Cell) Median() CellRun {
	if len(c.Runs) == 0 {
		return CellRun{}
	}
	med := func(f func(CellRun) float64) float64 { return median(c.values(f)) }
	d := func(f func(CellRun) time.Duration) time.Duration {
		return time.Duration(med(func(r CellRun) float64 { return float64(f(r)) }))
	}
	m := CellRun{SinglePerOp: d(func(r CellRun) time.Duration { return r.SinglePerOp }),
		PerOp:       d(func(r CellRun) time.Duration { return r.PerOp }),
		WorkerPerOp: d(func(r CellRun) time.Duration { return r.WorkerPerOp }),
		NsPerOp:     med(func(r CellRun) float64 { return r.NsPerOp }),
		Ops:         int64(med(func(r CellRun) float64 { return float64(r.Ops) })),
		P50:         d(func(r CellRun) time.Duration { return r.P50 }), P99: d(func(r CellRun) time.Duration { return r.P99 }),
		P999:       d(func(r CellRun) time.Duration { return r.P999 }),
		OpsPerSec:  med(func(r CellRun) float64 { return r.OpsPerSec }),
		Ratio:      med(func(r CellRun) float64 { return r.Ratio }),
		Efficiency: med(func(r CellRun) float64 { return r.Efficiency }),
		Done:       d(func(r CellRun) time.Duration { return r.Done }), DoneMax: d(func(r CellRun) time.Duration { return r.DoneMax })}
	m.OpsPerWorker = med(func(r CellRun) float64 { return r.OpsPerWorker })
	m.SingleOps = int64(med(func(r CellRun) float64 { return float64(r.SingleOps) }))
	if !slices.ContainsFunc(c.Runs, func(r CellRun) bool { return !r.LockCounted }) {
		m.LockCounted = true
		m.LockRead = med(func(r CellRun) float64 { return r.LockRead })
		m.LockWrite = med(func(r CellRun) float64 { return r.LockWrite })
		m.LockContended = med(func(r CellRun) float64 { return r.LockContended })
		m.LockWrites = int64(med(func(r CellRun) float64 { return float64(r.LockWrites) }))
		m.LockReadUncounted = slices.ContainsFunc(c.Runs, func(r CellRun) bool { return r.LockReadUncounted })
	}
	c.medianWriters(&m)
	for _, r := range c.Runs {
		m.Unexpected += r.Unexpected
		for _, w := range r.Warnings {
			if !slices.Contains(m.Warnings, w) {
				m.Warnings = append(m.Warnings, w)
			}
		}
	}
	return m
}

// values is f of each run, in run order.
func (c Cell) values(f func(CellRun) float64) []float64 {
	v := make([]float64, len(c.Runs))
	for i, r := range c.Runs {
		v[i] = f(r)
	}
	return v
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// Cell returns the cell of row index i, op and threads, or nil.
func (r *CompareResult) Cell(i int, op string, threads int) *Cell {
	for k := range r.Cells {
		c := &r.Cells[k]
		if c.Row == r.Rows[i] && c.Op == op && c.Threads == threads {
			return c
		}
	}
	return nil
}

// RatioToBaseline is c's median figure (per-op; time to done for hwloc)
// over that of the locking.Baseline row of the same target kind, op and
// thread count. It is false without one.
func (r *CompareResult) RatioToBaseline(c Cell) (float64, bool) {
	m := r.baselineCell(c)
	if m == nil || len(m.Runs) == 0 || m.Median().Figure(c.Op) == 0 {
		return 0, false
	}
	return float64(c.Median().Figure(c.Op)) / float64(m.Median().Figure(c.Op)), true
}

// Unexpected is the number of unexpected errors in every run.
func (r *CompareResult) Unexpected() int64 {
	var n int64
	for _, c := range r.Cells {
		n += c.Median().Unexpected
	}
	return n
}

// Spread is how a cell's headline figure (CellRun.Figure) varies over its
// runs.
type Spread struct {
	Min, Median, Max time.Duration
	// Lo and Hi bound the median's 95% confidence interval, as benchstat
	// computes it (golang.org/x/perf/benchmath, assuming no distribution);
	// CI is false when the runs are too few for one (fewer than 6).
	Lo, Hi time.Duration
	CI     bool
}

// Spread is the spread of c's headline figure; the zero Spread without
// runs.
func (c Cell) Spread() Spread {
	if len(c.Runs) == 0 {
		return Spread{}
	}
	v := c.values(func(r CellRun) float64 { return float64(r.Figure(c.Op)) })
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(v, &benchmath.DefaultThresholds), 0.95)
	sp := Spread{Min: time.Duration(slices.Min(v)), Median: time.Duration(median(v)), Max: time.Duration(slices.Max(v))}
	if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
		sp.Lo, sp.Hi, sp.CI = time.Duration(s.Lo), time.Duration(s.Hi), true
	}
	return sp
}

// Overlaps reports whether the ranges (min to max) of a and b overlap.
func (a Spread) Overlaps(b Spread) bool { return a.Min <= b.Max && b.Min <= a.Max }

// baselineCell is the cell of the locking.Baseline row of c's target
// kind, op and thread count. It is nil without one, and for kind path,
// which has no lock.
func (r *CompareResult) baselineCell(c Cell) *Cell {
	if c.Row.Target.Kind == targets.TargetPath {
		return nil
	}
	for i, row := range r.Rows {
		if row.Target.Kind == c.Row.Target.Kind && row.Target.Lock == locking.Baseline {
			return r.Cell(i, c.Op, c.Threads)
		}
	}
	return nil
}

// Unresolved reports whether c's ratio to the baseline says nothing: its
// runs' range overlaps the baseline cell's. It is false for the baseline
// row itself and without one.
func (r *CompareResult) Unresolved(c Cell) bool {
	m := r.baselineCell(c)
	if m == nil || m.Row == c.Row || len(m.Runs) == 0 || len(c.Runs) == 0 {
		return false
	}
	return c.Spread().Overlaps(m.Spread())
}
