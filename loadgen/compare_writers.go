package loadgen

import (
	"time"

	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// Writers in a comparison (CompareConfig.Writers). Some locks put their
// cost on the writer's side: a percpu-rwsem's grace period per write,
// BRAVO's revocation, rcu's copy and wait. Such a lock looks free while
// nothing writes. With writers, each cell's runs change the tree beside
// the readers. The writers time their own changes. The tables get a third
// one per op, the writers' latency per change, beside the lock-use table.

// writersFor is how many writers the cells of row run, and a note if the
// row cannot have the writers asked for. The sys rows run readers only,
// since loadgen never writes to a real sysfs. So does a lock that refuses
// writers.
func (r *CompareResult) writersFor(row Row) (int, string) {
	switch t := row.Target; {
	case r.Writers == 0:
		return 0, ""
	case t.Kind == targets.TargetPath:
		return 0, "no writers: loadgen never writes to a real sysfs; readers only"
	case !targets.AcceptsWriters(t.Lock):
		return 0, "no writers: lock strategy " + t.Lock + " refuses them; readers only"
	}
	return r.Writers, ""
}

// medianWriters sets m's writer figures to the medians of c's runs that
// had writers.
func (c Cell) medianWriters(m *CellRun) {
	var runs []CellRun
	for _, r := range c.Runs {
		if r.Writers > 0 {
			runs = append(runs, r)
			m.Writers = max(m.Writers, r.Writers)
		}
	}
	if len(runs) == 0 {
		return
	}
	w := Cell{Runs: runs}
	med := func(f func(CellRun) float64) float64 { return median(w.values(f)) }
	m.WriteChanges = int64(med(func(r CellRun) float64 { return float64(r.WriteChanges) }))
	m.WriteRate = med(func(r CellRun) float64 { return r.WriteRate })
	m.WriteP50 = time.Duration(med(func(r CellRun) float64 { return float64(r.WriteP50) }))
	m.WriteP99 = time.Duration(med(func(r CellRun) float64 { return float64(r.WriteP99) }))
}
