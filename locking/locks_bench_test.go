package locking

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/parbench"
)

// benchStats are the counter settings the benchmarks compare: off, on
// (hold time sampled at the default rate) and exact (every hold timed).
var benchStats = []struct {
	name string
	opts Options
}{
	{"on", Options{}},
	{"off", Options{NoStats: true}},
	{"exact", Options{HoldSampleEvery: 1}},
}

// BenchmarkLock measures one read-side enter/exit per op, and one
// write-side lock/unlock, with the counters on, off and exact, so the
// cost of keeping them on is a benchstat comparison away:
//
//	go test -run x -bench Lock -cpu 1,2 ./locking/ | benchstat -col /stats -
func BenchmarkLock(b *testing.B) {
	for _, name := range Names {
		for _, stats := range benchStats {
			s, err := New(name, stats.opts)
			require.NoError(b, err)
			b.Run(fmt.Sprintf("lock=%s/stats=%s/side=read", name, stats.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.RUnlock(s.RLock())
				}
			})
			b.Run(fmt.Sprintf("lock=%s/stats=%s/side=read/parallel", name, stats.name), func(b *testing.B) {
				b.ReportAllocs()
				parbench.Run(b, 0, func(int) func() { return func() { s.RUnlock(s.RLock()) } })
			})
			b.Run(fmt.Sprintf("lock=%s/stats=%s/side=write", name, stats.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := s.Lock(); err != nil { // none: not sealed, so it takes writers
						b.Fatal(err)
					}
					s.Unlock()
				}
			})
		}
	}
}
