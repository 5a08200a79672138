package fusefs

import (
	"testing"

	"github.com/kernfsim/kernfsim/internal/parbench"
)

// BenchmarkStatsCount is the request counter every FUSE request adds to,
// from every CPU at once: -cpu 1,2 shows whether two CPUs write one line.
//
//	go test -run '^$' -bench StatsCount -cpu 1,2 ./fusefs/
func BenchmarkStatsCount(b *testing.B) {
	s := newStats()
	parbench.Run(b, 0, func(int) func() { return func() { s.count(opLookup) } })
}
