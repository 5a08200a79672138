package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/sysfs"
)

func TestCompareReportsGolden(t *testing.T) {
	checkGolden(t, compareFixture, golden[loadgen.CompareResult]{"compare_table.golden", WriteCompareTable},
		golden[loadgen.CompareResult]{"compare.json.golden", WriteCompareJSON}, golden[loadgen.CompareResult]{"compare_bench.golden", WriteCompareBench})
}

func TestCompareWritersReportsGolden(t *testing.T) {
	checkGolden(t, compareWritersFixture, golden[loadgen.CompareResult]{"compare_writers_table.golden", WriteCompareTable},
		golden[loadgen.CompareResult]{"compare_writers.json.golden", WriteCompareJSON}, golden[loadgen.CompareResult]{"compare_writers_bench.golden", WriteCompareBench})
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

// A comparison written as JSON reads back into the same tables (the
// plot's round trip is package plot's test).
func TestReadCompareJSON(t *testing.T) {
	orig := compareFixture()
	orig.Rows[0].Target.Mount = &serverproc.Mount{Lock: "mutex", Transport: "devfuse", Permissions: "kernel"}
	orig.Rows[0].Target.Kind = targets.TargetKernfsim
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
		Rows: []loadgen.Row{{Target: targets.Target{Kind: targets.TargetSim, Lock: "mutex", Tree: tree}}, {Target: targets.Target{Kind: targets.TargetSim, Lock: "rcu", Tree: tree}},
			{Target: targets.Target{Kind: targets.TargetSim, Lock: "none", Tree: tree}}},
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

// A calibration of 0 (the sim's own part as slow as the real call) still
// makes the writes, and the cell's name says so.
func TestSimCostZeroSharedWrites(t *testing.T) {
	r := compareFixture()
	r.SimCosts = map[string]time.Duration{"files": 0}
	for _, c := range r.Cells {
		if c.Row.Target.Kind != targets.TargetSim {
			continue
		}
		ct := r.CellTarget(c)
		if c.Op == "files" && !ct.SimSharedWrites() {
			t.Errorf("a cell calibrated to 0: target %+v makes no shared writes", ct)
		}
		if name := benchName(ct, workload.OpOpenReadClose, false, 2); c.Op == "files" && !strings.Contains(name, "/shared=on/") {
			t.Errorf("a cell calibrated to 0: bench name %q does not say shared=on", name)
		}
	}
}
