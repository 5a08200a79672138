package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ReadCompareJSON reads a document WriteCompareJSON wrote back into a
// CompareResult, with what its reports need (rows, cells and every run's
// figures, provenance, notes, the sim rows' costs; not how those were
// calibrated), so that a saved comparison can be drawn or printed again.
// Rows come in the order of their first cell.
func ReadCompareJSON(r io.Reader) (CompareResult, error) {
	var raw json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return CompareResult{}, fmt.Errorf("not a JSON document: %w", err)
	}
	var head struct {
		Schema       string
		SinglePinned *bool `json:"single_pinned"`
	}
	json.Unmarshal(raw, &head)
	switch head.Schema {
	case SchemaCompare:
	case SchemaRun:
		return CompareResult{}, fmt.Errorf("a single run (%s), not a comparison: write one with loadgen compare --format json", head.Schema)
	default:
		return CompareResult{}, fmt.Errorf("schema %q, not %s: write one with loadgen compare --format json", head.Schema, SchemaCompare)
	}
	var j JSONCompare
	if err := json.Unmarshal(raw, &j); err != nil {
		return CompareResult{}, fmt.Errorf("a %s document that does not parse: %w", SchemaCompare, err)
	}
	res := CompareResult{Provenance: j.Provenance.ToProvenance(), Ops: j.Ops, Threads: j.Threads, Times: j.Times,
		SimTimes: j.SimTimes, SysTimes: j.SysTimes, HwlocTimes: j.HwlocTimes, Repeats: j.Repeats, CPUs: j.CPUs, Pinned: j.Pinned,
		Elapsed: time.Duration(j.ElapsedNs), Interrupted: j.Interrupted, Notes: j.Notes,
		SinglePinned: j.SinglePinned, MinDuration: time.Duration(j.MinDurationNs), WarmUp: time.Duration(j.WarmUpNs),
		Writers: j.Writers, WriteRate: j.WriteRate}
	if head.SinglePinned == nil {
		res.SinglePinned = j.Pinned // written before the single worker ran unpinned by default
	}
	for op, ns := range j.SimCostsNs {
		if res.SimCosts == nil {
			res.SimCosts = map[string]time.Duration{}
		}
		res.SimCosts[op] = time.Duration(ns)
	}
	rows := map[string]Row{}
	for _, jc := range j.Cells {
		key := jc.Target.Kind + "|" + jc.Target.Dir + "|" + jc.Target.Lock + "|" + jc.Target.Tree
		row, ok := rows[key]
		if !ok {
			row = Row{Target: jc.Target.toTarget()}
			rows[key] = row
			res.Rows = append(res.Rows, row)
		}
		c := Cell{Row: row, Op: jc.Op, Threads: jc.Threads}
		for _, run := range jc.Runs {
			c.Runs = append(c.Runs, run.toCellRun())
		}
		res.Cells = append(res.Cells, c)
	}
	return res, nil
}

// toTarget is JSONTarget's inverse, as far as reports need.
func (j JSONTarget) toTarget() Target {
	t := Target{Kind: TargetKind(j.Kind), Dir: j.Dir, Lock: j.Lock}
	t.Tree.CPUs = j.CPUs
	if m := j.Mount; m != nil {
		t.Mount = &Mount{Lock: m.Lock, Transport: m.Transport, Permissions: m.Permissions,
			EntryTimeout: time.Duration(m.EntryTimeoutNs), AttrTimeout: time.Duration(m.AttrTimeoutNs),
			NegativeTimeout: time.Duration(m.NegativeTimeoutNs), Negatives: m.Negatives, FellBack: m.FellBack}
	}
	return t
}

// toCellRun is jsonCellRun's inverse.
func (j JSONCellRun) toCellRun() CellRun {
	c := CellRun{SinglePerOp: time.Duration(j.SinglePerOpNs), PerOp: time.Duration(j.PerOpNs),
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
