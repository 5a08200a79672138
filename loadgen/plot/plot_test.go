package plot

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/report"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// comparison is a grid of three rows, two ops and two thread counts,
// three runs a cell.
func comparison() loadgen.CompareResult {
	r := loadgen.CompareResult{Ops: []string{"files", "missing"}, Threads: []int{1, 48}, Repeats: 3, CPUs: 2,
		Rows: []loadgen.Row{{Target: targets.Target{Kind: targets.TargetSim, Lock: "mutex"}},
			{Target: targets.Target{Kind: targets.TargetSim, Lock: "rcu"}}, {Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}}}}
	for i, row := range r.Rows {
		for _, op := range r.Ops {
			for _, th := range r.Threads {
				c := loadgen.Cell{Row: row, Op: op, Threads: th}
				for rep := range 3 {
					c.Runs = append(c.Runs, loadgen.CellRun{PerOp: time.Duration((i+1)*th*(rep+2)) * 100 * time.Nanosecond})
				}
				r.Cells = append(r.Cells, c)
			}
		}
	}
	return r
}

func TestWriteCompare(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteCompare(&b, comparison(), "svg"))
	for _, want := range []string{"<svg", "op=files", "op=missing", "sim mutex", "sim rcu", "sys", "threads"} {
		assert.Contains(t, b.String(), want, "plot lacks %q", want)
	}
}

// A comparison read back from its JSON draws in every format.
func TestWriteCompareReadBack(t *testing.T) {
	var j bytes.Buffer
	require.NoError(t, report.WriteCompareJSON(&j, comparison()))
	back, err := report.ReadCompareJSON(&j)
	require.NoError(t, err)
	for _, format := range Formats {
		var p bytes.Buffer
		if err := WriteCompare(&p, back, format); err != nil || p.Len() < 1000 {
			t.Errorf("%s: %v, %d bytes", format, err, p.Len())
		}
	}
}

func TestFormat(t *testing.T) {
	for path, want := range map[string]string{"a.svg": "svg", "b.PNG": "png", "c/d.pdf": "pdf", "e.jpg": "", "f": ""} {
		if got, ok := Format(path); got != want || ok != (want != "") {
			t.Errorf("%s: got %q %v, want %q", path, got, ok, want)
		}
	}
}

func TestFormatsRefused(t *testing.T) {
	err := WriteCompare(&bytes.Buffer{}, comparison(), "jpg")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "svg, png, pdf"), "got %v, want the formats named", err)
}
