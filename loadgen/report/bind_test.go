package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
)

// bindFixture is a comparison of sim mutex and sim kernfs74, op files at
// 1 and 2 threads, whose runs carry lock counters: mutex holds its lock
// 100 ns per op of 1 us (binds at 10 CPUs); kernfs74 reads its tree rwsem
// once and its attribute rwsem twice per op, with lines priced at 50 ns
// (tree-read S 100 ns, attr S 200 ns: binds at 5 CPUs on attr).
func bindFixture() loadgen.CompareResult {
	r := loadgen.CompareResult{Ops: []string{"files"}, Threads: []int{1, 2}, CPUs: 2, Repeats: 1, FieldNames: testFlags,
		LineTransfer: 50 * time.Nanosecond,
		Rows:         []loadgen.Row{{Target: targets.Target{Kind: targets.TargetSim, Lock: "mutex"}}, {Target: targets.Target{Kind: targets.TargetSim, Lock: "kernfs74"}}}}
	r.Cells = loadgen.NewCells(r)
	const ops = 1000
	for i := range r.Cells {
		c := &r.Cells[i]
		st := locking.Stats{ReadSideCounted: true, CountersSwitchedOn: true, HoldSampleEvery: 1,
			LockCounts: locking.LockCounts{ReadAcquisitions: 2 * ops, ReadHeld: 100 * ops}}
		if c.Row.Target.Lock == "kernfs74" {
			st.ReadAcquisitions, st.ReadHeld = ops, 20*ops
			st.Attr = locking.LockCounts{ReadAcquisitions: 2 * ops, ReadHeld: 30 * ops}
		}
		c.Runs = []loadgen.CellRun{{SinglePerOp: time.Microsecond, PerOp: time.Microsecond, Ops: ops, LockCounted: true,
			LockUse: &loadgen.LockUse{Stats: st, Wall: time.Millisecond}}}
	}
	return r
}

// TestCompareBindTable: the table names each row's busiest class and its
// CPUs_bind, the class lines give every class, and the JSON the same.
func TestCompareBindTable(t *testing.T) {
	r := bindFixture()
	var b bytes.Buffer
	require.NoError(t, WriteCompareTable(&b, r))
	out := b.String()
	for _, want := range []string{
		"binds at (model)",
		"mutex      tree-read 10",
		"kernfs74   attr 5.0",
		"2 line transfers of 50ns per shared read acquisition",
		"where each design binds (model, at 2 threads): sim mutex tree-read from 10 CPUs, sim kernfs74 attr from 5.0 CPUs",
		"sim kernfs74 at 2 threads: tree-read 1.00/op held 20ns S 100ns binds 10; tree-write 0.00/op held 0ns S 0ns binds never; attr 2.00/op held 30ns S 200ns binds 5.0; open-file 0.00/op held 0ns S 0ns binds never; T 1.00us",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	require.NoError(t, WriteCompareJSON(&b, r))
	var j JSONCompare
	require.NoError(t, json.Unmarshal(b.Bytes(), &j))
	require.Equal(t, int64(50), j.LineTransferNs)
	got := j.Cells[len(j.Cells)-1].Binding
	require.NotNil(t, got)
	require.Equal(t, "attr", got.Busiest)
	require.InDelta(t, 5.0, *got.BindCPUs, 1e-9)
	require.Len(t, got.Classes, 4)
	require.Nil(t, got.Classes[1].BindCPUs, "tree-write never binds")
}
