package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/locking"
)

// Where each design binds: a table per op of the CPU count from which
// the busiest lock class alone would cap throughput (loadgen.BindingOf,
// a model, not a measurement), and a line per row giving each class's
// use per operation at the largest thread count.

// hasBinding reports whether any cell of op has a binding.
func hasBinding(r loadgen.CompareResult, op string) bool {
	return slices.ContainsFunc(r.Cells, func(c loadgen.Cell) bool { return c.Op == op && r.Binding(c) != nil })
}

// writeBindTable writes op's binding table and its class lines.
func writeBindTable(w io.Writer, r loadgen.CompareResult, op string) error {
	err := writeCellTable(w, r, op, "binds at (model)", false, func(c *loadgen.Cell) string {
		if c == nil {
			return "-"
		}
		return bindCellText(r.Binding(*c))
	})
	if err != nil {
		return err
	}
	ew := textout.NewWriter(w)
	ew.Printf("binds at: the CPUs from which the busiest lock class alone caps throughput, T/S: T the one-thread per-op, "+
		"S the class's serial time per op (exclusive holds%s); a model, not a measurement (docs/performance.md)\n", lineText(r))
	if len(r.Threads) > 0 {
		th := slices.Max(r.Threads)
		for i, row := range r.Rows {
			if c := r.Cell(i, op, th); c != nil {
				if b := r.Binding(*c); b != nil {
					ew.Printf("  %s at %d threads: %s\n", row.Label(), th, classesText(b))
				}
			}
		}
	}
	return ew.Err()
}

// lineText says what a shared read side's serial time was priced at,
// where a row has one; "" where none has.
func lineText(r loadgen.CompareResult) string {
	if !slices.ContainsFunc(r.Rows, sharedReads) {
		return ""
	}
	if r.LineTransfer <= 0 {
		return "; shared read sides unpriced: the line transfer time could not be measured"
	}
	return "; 2 line transfers of " + textout.Dur(r.LineTransfer) + " per shared read acquisition, measured here"
}

// sharedReads reports whether row's lock has a read side that readers
// share by writing one line (rwsem, the kernfs rwsems, percpu's and
// bravo's slow paths).
func sharedReads(row loadgen.Row) bool {
	tr, err := locking.TraitsOf(strings.Fields(row.Target.Lock + " x")[0])
	return err == nil && !tr.ScopedReads && !tr.ExclusiveReads
}

// bindCellText is b as a cell: "attr 25", "none" where no class binds,
// "-" without counters.
func bindCellText(b *loadgen.Binding) string {
	switch {
	case b == nil:
		return "-"
	case b.Busiest == "":
		return "none"
	}
	return b.Busiest + " " + cpusText(b.BindCPUs)
}

// cpusText is a CPU count to bind at: "25", ">9999".
func cpusText(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "never"
	case v >= 10000:
		return ">9999"
	case v < 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// classesText is each class of b: acquisitions and hold per op, serial
// time, CPUs to bind at; then T.
func classesText(b *loadgen.Binding) string {
	var parts []string
	for _, c := range b.Classes {
		parts = append(parts, fmt.Sprintf("%s %.2f/op held %s S %s binds %s", c.Class, c.Acquisitions,
			textout.Dur(c.Held), textout.Dur(c.Serial), cpusText(c.BindCPUs)))
	}
	return strings.Join(parts, "; ") + "; T " + textout.Dur(b.OpTime)
}

// JSONBinding is a loadgen.Binding; bind_cpus is null where no class
// binds.
type JSONBinding struct {
	OpTimeNs       int64       `json:"op_time_ns"`
	LineTransferNs int64       `json:"line_transfer_ns"` // 0: not measured, shared read sides unpriced
	Busiest        string      `json:"busiest,omitempty"`
	BindCPUs       *float64    `json:"bind_cpus"`
	Classes        []JSONClass `json:"classes"`
}

// JSONClass is a loadgen.ClassUse, per operation.
type JSONClass struct {
	Class        string   `json:"class"`
	Acquisitions float64  `json:"acquisitions"`
	HeldNs       int64    `json:"held_ns"`
	SerialNs     int64    `json:"serial_ns"`
	BindCPUs     *float64 `json:"bind_cpus"` // null: never binds
}

func newJSONBinding(b *loadgen.Binding) *JSONBinding {
	if b == nil {
		return nil
	}
	finite := func(v float64) *float64 {
		if math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	j := &JSONBinding{OpTimeNs: int64(b.OpTime), LineTransferNs: int64(b.LineTransfer), Busiest: b.Busiest,
		BindCPUs: finite(b.BindCPUs), Classes: []JSONClass{}}
	for _, c := range b.Classes {
		j.Classes = append(j.Classes, JSONClass{Class: c.Class, Acquisitions: c.Acquisitions, HeldNs: int64(c.Held),
			SerialNs: int64(c.Serial), BindCPUs: finite(c.BindCPUs)})
	}
	return j
}

// bindLine is the summary's line on where each row's design binds at the
// largest thread count; "" where no row has a binding.
func bindLine(r *loadgen.CompareResult, op string) string {
	if len(r.Threads) == 0 {
		return ""
	}
	th := slices.Max(r.Threads)
	var parts []string
	for i, row := range r.Rows {
		c := r.Cell(i, op, th)
		if c == nil {
			continue
		}
		switch b := r.Binding(*c); {
		case b == nil:
		case b.Busiest == "":
			parts = append(parts, row.Label()+" no lock binds")
		default:
			parts = append(parts, fmt.Sprintf("%s %s from %s CPUs", row.Label(), b.Busiest, cpusText(b.BindCPUs)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("where each design binds (model, at %d threads): %s", th, strings.Join(parts, ", "))
}
