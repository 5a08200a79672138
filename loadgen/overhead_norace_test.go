//go:build !race

package loadgen

import "testing"

// loadgen's single-thread per-op against /sys agrees with a minimal loop
// of raw system calls: the best of three interleaved tries of each, so
// that a busy machine does not fail the test. The README's figure (within
// 10%) comes from the benchmarks; this bound leaves room for noise.
func TestOverheadAgainstRawSyscalls(t *testing.T) {
	requireSys(t)
	const n, tries = 10000, 3
	var raw, lg []float64
	for range tries {
		r, err := rawPerOp(n)
		if err != nil {
			t.Fatal(err)
		}
		l, err := loadgenPerOp(n)
		if err != nil {
			t.Fatal(err)
		}
		raw, lg = append(raw, float64(r)), append(lg, float64(l))
	}
	bestRaw, bestLg := minOf(raw), minOf(lg)
	t.Logf("per op: raw syscalls %.0fns, loadgen %.0fns (%+.1f%%)", bestRaw, bestLg, 100*(bestLg/bestRaw-1))
	if bestLg > 1.3*bestRaw {
		t.Errorf("loadgen single per-op %.0fns is more than 30%% above the raw loop's %.0fns", bestLg, bestRaw)
	}
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = min(m, x)
	}
	return m
}
