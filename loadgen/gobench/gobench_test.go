package gobench

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// TestRoundTrip reads Writer's output back with benchfmt.Reader: the
// header's configuration, each line's name, iterations and rounded
// metrics, with comment lines ignored.
func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, "Test CPU")
	w.Comment("setup: %s", "sim")
	w.Line("BenchmarkX/lock=rcu-2", 100, Metric{449.23, "ns/op"}, Metric{2.1e6, "p99-ns"}, Metric{1.08512, "ratio"})
	w.Comment("warning: %d", 1)
	w.Line("BenchmarkX/lock=mutex-2", 7, Metric{0, "ns/op"})
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(strings.NewReader(b.String()), "x")
	var got []string
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			t.Fatalf("not a result: %v", r.Result())
		}
		if res.GetConfig("cpu") != "Test CPU" || res.GetConfig("pkg") != Pkg {
			t.Errorf("config cpu %q, pkg %q", res.GetConfig("cpu"), res.GetConfig("pkg"))
		}
		s := fmt.Sprintf("%s iters=%d", res.Name, res.Iters)
		for _, v := range res.Values {
			if v.OrigUnit != "" { // the reader tidies ns to sec
				v.Unit, v.Value = v.OrigUnit, v.OrigValue
			}
			s += fmt.Sprintf(" %s=%v", v.Unit, v.Value)
		}
		got = append(got, s)
	}
	want := []string{"X/lock=rcu-2 iters=100 ns/op=449.2 p99-ns=2.1e+06 ratio=1.085", "X/lock=mutex-2 iters=7 ns/op=0"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read back:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), b.String())
	}
}

// TestRound holds Round to testing's precisions.
func TestRound(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{21534.6, 21535}, {999.96, 1000}, {449.23, 449.2}, {12.3456, 12.35}, {1.23456, 1.235},
		{0.123456, 0.1235}, {0.0123456, 0.01235}, {-449.23, -449.2}, {0, 0},
	} {
		if got := Round(c.in); got != c.want {
			t.Errorf("Round(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("full")
}

// TestErrKept: the first write error is kept and later writes are skipped.
func TestErrKept(t *testing.T) {
	f := &failWriter{}
	w := NewWriter(f, "c")
	w.Comment("a")
	w.Line("BenchmarkX", 1, Metric{1, "ns/op"})
	if w.Err() == nil || f.n != 1 {
		t.Errorf("Err() = %v after %d writes, want an error after 1", w.Err(), f.n)
	}
}
