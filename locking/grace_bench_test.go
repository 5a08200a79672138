package locking

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/parbench"
)

// BenchmarkGraceRead measures entering and leaving a read-side critical
// section, alone and on every CPU at once (parbench.Run: the harness
// writes no line the CPUs share).
func BenchmarkGraceRead(b *testing.B) {
	b.Run("mode=serial", func(b *testing.B) {
		g := NewGrace(GraceConfig{})
		b.ReportAllocs()
		for b.Loop() {
			g.ReadUnlock(g.ReadLock())
		}
	})
	b.Run("mode=parallel", func(b *testing.B) {
		g := NewGrace(GraceConfig{})
		b.ReportAllocs()
		parbench.Run(b, 0, func(int) func() { return func() { g.ReadUnlock(g.ReadLock()) } })
	})
	// The same section on a random shard per call, as ReadLock once chose:
	// two CPUs then write the same counter line on about half their
	// sections, and -cpu 2 is slower per op than -cpu 1.
	b.Run("mode=parallel/shard=random", func(b *testing.B) {
		g := NewGrace(GraceConfig{})
		b.ReportAllocs()
		parbench.Run(b, 0, func(int) func() {
			return func() {
				t := rand.Uint32()&g.mask<<1 | g.phase.Load()&1
				g.ctr[t].n.Add(1)
				g.ReadUnlock(ReadToken(t))
			}
		})
	})
}

// BenchmarkGraceSynchronize measures one caller's wait for a grace period
// with no reader inside, in the unit that suits each kind, and with every
// CPU calling at once, in grace periods per call (sharing makes it small).
func BenchmarkGraceSynchronize(b *testing.B) {
	kinds := []struct {
		name string
		sync func(*Grace)
		unit time.Duration
		per  string
	}{
		{"normal", (*Grace).Synchronize, time.Millisecond, "ms/gp"},
		{"expedited", (*Grace).SynchronizeExpedited, time.Microsecond, "us/gp"},
	}
	for _, k := range kinds {
		b.Run("kind="+k.name, func(b *testing.B) {
			g := NewGrace(GraceConfig{})
			b.ReportAllocs()
			for b.Loop() {
				k.sync(g)
			}
			b.ReportMetric(float64(b.Elapsed())/float64(k.unit)/float64(b.N), k.per)
		})
		b.Run("kind="+k.name+"/callers=parallel", func(b *testing.B) {
			g := NewGrace(GraceConfig{})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k.sync(g)
				}
			})
			b.ReportMetric(float64(g.Stats().GracePeriods)/float64(b.N), "gps/op")
		})
	}
}

// BenchmarkGraceCall measures what Call costs its caller; the callbacks run
// later, on the worker.
func BenchmarkGraceCall(b *testing.B) {
	b.Run("mode=serial", func(b *testing.B) {
		g := NewGrace(GraceConfig{})
		b.ReportAllocs()
		for b.Loop() {
			g.Call(func() {})
		}
		b.StopTimer()
		g.Barrier()
	})
	b.Run("mode=parallel", func(b *testing.B) {
		g := NewGrace(GraceConfig{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				g.Call(func() {})
			}
		})
		b.StopTimer()
		g.Barrier()
	})
}
