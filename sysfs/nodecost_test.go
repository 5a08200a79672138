package sysfs

import (
	"runtime"
	"testing"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// TestNodeCost keeps a synthetic tree's nodes about as cheap as kernfs's
// (a kernfs_node is about 128 bytes): at most 128 bytes of live heap and
// 1.5 allocations a node, built, for a tree of 20,000 memory blocks
// (BenchmarkBuild measures 118 and 1.10 with 90,500). It also keeps the
// garbage the build makes small, as garbage is what makes the collector
// run while a big tree is built: at most 224 bytes allocated a node in
// all, garbage included (about 160; 185 under the race detector).
func TestNodeCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a tree of 225,000 nodes")
	}
	c := SynthConfig{MemBlocks: 20_000}.WithDefaults()
	runtime.GC()
	before := memStats()
	tr := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
	if err := BuildSynthetic(tr, c); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	after := memStats()
	nodes := float64(tr.Nodes())
	runtime.KeepAlive(tr)
	perNode := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / nodes
	allocs := float64(after.Mallocs-before.Mallocs) / nodes
	total := float64(after.TotalAlloc-before.TotalAlloc) / nodes
	t.Logf("%.0f nodes: %.1f B live, %.2f allocations and %.0f B allocated a node", nodes, perNode, allocs, total)
	if perNode > 128 {
		t.Errorf("a node takes %.1f bytes of live heap, want at most 128", perNode)
	}
	if allocs > 1.5 {
		t.Errorf("building takes %.2f allocations a node, want at most 1.5", allocs)
	}
	if total > 224 {
		t.Errorf("building allocates %.0f bytes a node in all, want at most 224", total)
	}
}
