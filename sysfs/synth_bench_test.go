package sysfs

import (
	"runtime"
	"testing"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// BenchmarkBuild builds synthetic trees, reporting the live heap each node
// costs once built (HeapAlloc after a GC, minus the same before the build)
// and the allocations made per node while building (garbage included).
// Both are deterministic enough to compare under load; the time is not:
//
//	go test -run x -bench 'Build/nodes=1000000' -benchtime 1x -count 3 ./sysfs/
func BenchmarkBuild(b *testing.B) {
	million := SynthConfig{MemBlocks: 90_500}.WithDefaults() // 5,033 + 11 per block nodes
	for _, lock := range locking.Names {
		b.Run("nodes=1000000/lock="+lock, func(b *testing.B) {
			benchBuild(b, lock, 1_000_000, func(t *kernfsim.Tree) error { return BuildSynthetic(t, million) })
		})
	}
	for _, lock := range locking.Names {
		b.Run("nodes=100000/dir=memory/lock="+lock, func(b *testing.B) {
			benchBuild(b, lock, 100_000, buildMemoryDir(100_000))
		})
	}
	b.Run("config=default/lock=rwsem", func(b *testing.B) {
		benchBuild(b, "rwsem", 0, func(t *kernfsim.Tree) error { return BuildSynthetic(t, SynthConfig{}.WithDefaults()) })
	})
}

// buildMemoryDir adds one directory of n empty memoryN directories: the
// cost of inserting into a large directory, and nothing else.
func buildMemoryDir(n int) func(*kernfsim.Tree) error {
	return func(t *kernfsim.Tree) error {
		memory := dir{each(n, func(i int) (string, spec) { return "memory" + itoa(i), dir{} })}
		return dir{{"memory", memory}}.addChildren(newBuilder(t), t.Root(), "")
	}
}

func benchBuild(b *testing.B, lock string, wantNodes int64, build func(*kernfsim.Tree) error) {
	b.ReportAllocs()
	var heap, nodes, allocs float64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		before, mallocs := heapAlloc()
		t := kernfsim.New(locking.MustNew(lock), kernfsim.Options{})
		b.StartTimer()
		if err := build(t); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		after, mallocsAfter := heapAlloc()
		heap += float64(after) - float64(before)
		allocs += float64(mallocsAfter - mallocs)
		nodes += float64(t.Nodes())
		if t.Nodes() < wantNodes {
			b.Fatalf("built %d nodes, want at least %d", t.Nodes(), wantNodes)
		}
		runtime.KeepAlive(t)
		b.StartTimer()
	}
	b.ReportMetric(heap/nodes, "B/node")
	b.ReportMetric(allocs/nodes, "allocs/node")
	b.ReportMetric(nodes/float64(b.N), "nodes")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/nodes, "ns/node")
}

// heapAlloc is the live heap and the count of allocations so far.
func heapAlloc() (uint64, uint64) {
	ms := memStats()
	return ms.HeapAlloc, ms.Mallocs
}

func memStats() runtime.MemStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}
