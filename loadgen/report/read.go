package report

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kernfsim/kernfsim/loadgen"
)

// SchemaError is ReadCompareJSON's error for a document that is not a
// comparison: a single run, or another schema.
type SchemaError struct {
	Schema string // the document's schema; "" when it has none
}

func (e *SchemaError) Error() string {
	if e.Schema == SchemaRun {
		return fmt.Sprintf("a single run (%s), not a comparison", e.Schema)
	}
	return fmt.Sprintf("schema %q, not %s", e.Schema, SchemaCompare)
}

// ReadCompareJSON reads a document WriteCompareJSON wrote back into a
// CompareResult, with what its reports need (rows, cells and every run's
// figures, provenance, notes, the sim rows' costs; not how those were
// calibrated), so that a saved comparison can be drawn or printed again.
// Rows come in the order of their first cell.
func ReadCompareJSON(r io.Reader) (loadgen.CompareResult, error) {
	var raw json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return loadgen.CompareResult{}, fmt.Errorf("not a JSON document: %w", err)
	}
	var head struct {
		Schema       string
		SinglePinned *bool `json:"single_pinned"`
	}
	json.Unmarshal(raw, &head)
	if head.Schema != SchemaCompare {
		return loadgen.CompareResult{}, &SchemaError{Schema: head.Schema}
	}
	var j JSONCompare
	if err := json.Unmarshal(raw, &j); err != nil {
		return loadgen.CompareResult{}, fmt.Errorf("a %s document that does not parse: %w", SchemaCompare, err)
	}
	res := loadgen.CompareResult{Provenance: j.Provenance.Provenance(), Ops: j.Ops, Threads: j.Threads, Times: j.Times,
		SimTimes: j.SimTimes, SysTimes: j.SysTimes, HwlocTimes: j.HwlocTimes, Repeats: j.Repeats, CPUs: j.CPUs, Pinned: j.Pinned,
		Elapsed: time.Duration(j.ElapsedNs), Interrupted: j.Interrupted, Notes: j.Notes,
		SinglePinned: j.SinglePinned, MinDuration: time.Duration(j.MinDurationNs), WarmUp: time.Duration(j.WarmUpNs),
		Writers: j.Writers, WriteRate: j.WriteRate}
	if head.SinglePinned == nil {
		res.SinglePinned = j.Pinned // a document without single_pinned pinned every worker alike
	}
	for op, ns := range j.SimCostsNs {
		if res.SimCosts == nil {
			res.SimCosts = map[string]time.Duration{}
		}
		res.SimCosts[op] = time.Duration(ns)
	}
	rows := map[string]loadgen.Row{}
	for _, jc := range j.Cells {
		key := jc.Target.Kind + "|" + jc.Target.Dir + "|" + jc.Target.Lock + "|" + jc.Target.Tree
		row, ok := rows[key]
		if !ok {
			row = loadgen.Row{Target: jc.Target.Target()}
			rows[key] = row
			res.Rows = append(res.Rows, row)
		}
		c := loadgen.Cell{Row: row, Op: jc.Op, Threads: jc.Threads}
		for _, run := range jc.Runs {
			c.Runs = append(c.Runs, run.cellRun())
		}
		res.Cells = append(res.Cells, c)
	}
	return res, nil
}

// cellRun is newJSONCellRun's inverse.
func (j JSONCellRun) cellRun() loadgen.CellRun {
	c := loadgen.CellRun{SinglePerOp: time.Duration(j.SinglePerOpNs), PerOp: time.Duration(j.PerOpNs),
		WorkerPerOp: time.Duration(j.WorkerPerOpNs), NsPerOp: j.NsPerOp, Ops: j.Ops, P50: time.Duration(j.P50Ns),
		P99: time.Duration(j.P99Ns), P999: time.Duration(j.P999Ns), OpsPerSec: j.OpsPerSec, Ratio: j.Ratio,
		Efficiency: j.Efficiency, Unexpected: j.Unexpected, Done: time.Duration(j.DoneNs),
		DoneMax: time.Duration(j.DoneMaxNs), Warnings: j.Warnings, OpsPerWorker: j.OpsPerWorker, SingleOps: j.SingleOps}
	if l := j.Lock; l != nil {
		c.LockCounted, c.LockRead, c.LockWrite, c.LockContended = true, l.ReadUtilization, l.WriteUtilization, l.Contended
		c.LockWrites, c.LockReadUncounted = l.WriteAcquisitions, l.ReadUncounted
	}
	if w := j.Writers; w != nil {
		c.Writers, c.WriteChanges, c.WriteRate = w.Writers, w.Changes, w.ChangesPerSec
		c.WriteP50, c.WriteP99 = time.Duration(w.P50Ns), time.Duration(w.P99Ns)
	}
	return c
}
