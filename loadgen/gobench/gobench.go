// Package gobench writes results in the Go benchmark format, for benchstat.
//
// The lines are written by golang.org/x/perf/benchfmt's Writer, so the
// format has one writer and its reader is benchfmt.Reader
// (TestRoundTrip). Figures are rounded to the precision go test prints.
package gobench

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"

	"golang.org/x/perf/benchfmt"
)

// Pkg is the pkg: configuration line: loadgen's, for every tool.
const Pkg = "github.com/kernfsim/kernfsim/loadgen"

// Metric is one value of a benchmark line and its unit, as "ns/op".
type Metric struct {
	Value float64
	Unit  string
}

// M is the metric of value in unit.
func M(value float64, unit string) Metric { return Metric{Value: value, Unit: unit} }

// Writer writes comment lines and benchmark lines. It keeps the first
// write error and skips writes after it.
type Writer struct {
	w   io.Writer
	bw  *benchfmt.Writer
	cfg []benchfmt.Config
	err error
}

// NewWriter returns a Writer to w. Its configuration is go test's header
// (goos, goarch, pkg and cpu); benchfmt writes it before the first line.
func NewWriter(w io.Writer, cpu string) *Writer {
	cfg := []benchfmt.Config{
		{Key: "goos", Value: []byte(runtime.GOOS), File: true},
		{Key: "goarch", Value: []byte(runtime.GOARCH), File: true},
		{Key: "pkg", Value: []byte(Pkg), File: true},
		{Key: "cpu", Value: []byte(cpu), File: true},
	}
	return &Writer{w: w, bw: benchfmt.NewWriter(w), cfg: cfg}
}

// Comment writes "# " and the formatted text as a line. benchstat
// ignores it.
func (w *Writer) Comment(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, "# "+format+"\n", args...)
	}
}

// Line writes one benchmark line. name starts with "Benchmark"; iters
// is the iteration count.
func (w *Writer) Line(name string, iters int, metrics ...Metric) {
	if w.err != nil {
		return
	}
	res := &benchfmt.Result{Config: w.cfg, Iters: iters}
	res.Name = benchfmt.Name(trimBenchmark(name))
	for _, m := range metrics {
		res.Values = append(res.Values, benchfmt.Value{Value: Round(m.Value), Unit: m.Unit})
	}
	w.err = w.bw.Write(res)
}

// Err is the first write error, or nil.
func (w *Writer) Err() error { return w.err }

// trimBenchmark drops the "Benchmark" prefix that benchfmt's Writer adds.
func trimBenchmark(name string) string {
	const p = "Benchmark"
	if len(name) >= len(p) && name[:len(p)] == p {
		return name[len(p):]
	}
	return name
}

// Round rounds x to the figures go test's testing package prints: whole
// numbers from 1000 up, four significant figures below.
func Round(x float64) float64 {
	var dec int
	switch y := math.Abs(x); {
	case y == 0 || y >= 999.95 || math.IsInf(y, 0) || math.IsNaN(y):
		dec = 0
	case y >= 99.995:
		dec = 1
	case y >= 9.9995:
		dec = 2
	case y >= 0.99995:
		dec = 3
	case y >= 0.099995:
		dec = 4
	default:
		dec = 5
	}
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', dec, 64), 64)
	if err != nil {
		return x
	}
	return v
}
