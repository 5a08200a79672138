package sysfs

import (
	"runtime"
	"testing"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// TestNodeCost keeps a synthetic tree's nodes about as cheap as kernfs's
// (a kernfs_node is about 128 bytes): at most 128 bytes of live heap and
// 2.5 allocations a node, built, for a tree of 20,000 memory blocks
// (BenchmarkBuild measures 118 and 1.83 with 90,500).
func TestNodeCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a tree of 225,000 nodes")
	}
	c := SynthConfig{MemBlocks: 20_000}.WithDefaults()
	runtime.GC()
	before, mallocs := heapAlloc()
	tr := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
	if err := BuildSynthetic(tr, c); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	after, mallocsAfter := heapAlloc()
	nodes := float64(tr.Nodes())
	runtime.KeepAlive(tr)
	perNode, allocs := (float64(after)-float64(before))/nodes, float64(mallocsAfter-mallocs)/nodes
	t.Logf("%.0f nodes: %.1f B and %.2f allocations a node", nodes, perNode, allocs)
	if perNode > 128 {
		t.Errorf("a node takes %.1f bytes of live heap, want at most 128", perNode)
	}
	if allocs > 2.5 {
		t.Errorf("building takes %.2f allocations a node, want at most 2.5", allocs)
	}
}
