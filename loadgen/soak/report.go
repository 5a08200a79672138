package soak

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
)

// WriteSample writes one periodic line of key=value fields:
//
//	soak lock=rwsem t=10s ops/s=41234 p99=120us errors=none rss=24.1MiB goroutines=12 threads=9 nodeids=143 changes=1000 storms=5
//
// A sample taken during warm-up says warm-up after t=.
func WriteSample(w io.Writer, s Sample) error {
	warm := ""
	if s.Warmup {
		warm = " warm-up"
	}
	_, err := fmt.Fprintf(w, "soak lock=%s t=%s%s ops/s=%.0f p99=%s errors=%s rss=%.1fMiB goroutines=%d threads=%d nodeids=%d changes=%d storms=%d\n",
		s.Lock, s.Elapsed.Round(time.Second), warm, s.OpsPerSec, textout.Dur(s.P99), errorsText(s.Errors),
		float64(s.Server.RSS)/(1<<20), s.Server.Goroutines, s.Server.Threads, s.Server.Nodeids, s.Changes, s.Storms)
	return err
}

// errorsText is "none" or ERRNO:COUNT by errno, comma-separated, the
// expected ones marked.
func errorsText(errs []errtally.ErrorCount) string {
	if len(errs) == 0 {
		return "none"
	}
	var s []string
	for _, e := range errs {
		mark := ""
		if e.Expected() {
			mark = "(expected)"
		}
		s = append(s, fmt.Sprintf("%s:%d%s", e.Name(), e.Count, mark))
	}
	return strings.Join(s, ",")
}

// WriteMode writes what a mode did and the three conditions' figures.
func WriteMode(w io.Writer, m Mode) error {
	ew := textout.NewWriter(w)
	pct := func(a, b int64) string {
		if a == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%+.1f%%", 100*(float64(b)/float64(a)-1))
	}
	ew.Printf("soak lock=%s done in %s: %d reader ops, %d device changes, %d storms (%d devices torn down)\n",
		m.Lock, m.Elapsed.Round(100*time.Millisecond), m.Ops, m.Changes, m.Storms, m.Torn)
	ew.Printf("  errors:      %s\n", errorsText(m.Errors))
	ew.Printf("  rss:         %s after warm-up, %s at the end (%s; at most %s)\n",
		fmtMiB(m.Warm.RSS), fmtMiB(m.End.RSS), pct(m.Warm.RSS, m.End.RSS), m.allowed(m.RSSSlack, fmtMiB))
	ew.Printf("  goroutines:  %d after warm-up, %d at the end (%s; at most %s)\n",
		m.Warm.Goroutines, m.End.Goroutines, pct(m.Warm.Goroutines, m.End.Goroutines), m.allowed(0, itoa64))
	ew.Printf("  threads:     %d after warm-up, %d at the end (not checked: Go keeps idle OS threads)\n", m.Warm.Threads, m.End.Threads)
	ew.Printf("  nodeids:     %d after drop_caches, baseline %d (%d before it)\n", m.Forgot, m.Baseline, m.End.Nodeids)
	if len(m.Failures) == 0 {
		ew.Printf("  verdict:     ok\n")
	}
	for _, f := range m.Failures {
		ew.Printf("  FAILED:      %s\n", f)
	}
	return ew.Err()
}

// WriteSummary writes the soak's last line: ok, or the failed
// conditions.
func WriteSummary(w io.Writer, r Result) error {
	if f := r.Failures(); len(f) > 0 {
		_, err := fmt.Fprintf(w, "soak: FAILED: %s\n", strings.Join(f, "; "))
		return err
	}
	var locks []string
	for _, m := range r.Modes {
		locks = append(locks, m.Lock)
	}
	_, err := fmt.Fprintf(w, "soak: ok (%s): no unexpected errno; server RSS and goroutines within their limits of the level after warm-up; nodeid table back to baseline after drop_caches\n",
		strings.Join(locks, ", "))
	return err
}
