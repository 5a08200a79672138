package cli

import (
	"fmt"

	"github.com/kernfsim/kernfsim/internal/meminfo"
	"github.com/kernfsim/kernfsim/sysfs"
)

// What a synthetic tree takes of the heap once built (HeapInuse), fitted
// to trees of 1k, 10k and 100k memory blocks, 4 to 8192 CPUs and 0 to
// 1024 netdevs and disks under each lock, and rounded up: 2800 (rwsem)
// to 3040 (mutex) bytes a memory block, 17.6 to 19.6 KiB a CPU (20 with
// 1024 NUMA nodes), 10 KiB a netdev, 14 KiB a disk. A build's peak RSS
// is about 1.6 times as much (garbage and the collector's headroom), so
// the tree must fit in half the memory available. One build's HeapInuse
// varies by up to 15% with what earlier builds left in partly used spans
// (rcu, 10000 blocks: 29.9 to 35.4 MB over four builds with a CPU kept
// busy), so a memory block counts 3600 bytes, above the largest seen.
// A container of --cgroups takes 23-25 KiB (its cgroup and half its
// pod's, 57 files each, measured with 4000). TestTreeMemory keeps the
// figures an upper bound.
const (
	memBlockBytes = 3600
	cpuBytes      = 20 << 10
	deviceBytes   = 14 << 10
	cgroupBytes   = 28 << 10
	fixedBytes    = 2 << 20
)

// treeMemory is about how much heap the tree c sizes takes.
func treeMemory(c sysfs.SynthConfig) int64 {
	return fixedBytes + int64(c.MemBlocks)*memBlockBytes + int64(c.CPUs)*cpuBytes + int64(c.Netdevs+c.Disks)*deviceBytes +
		int64(c.Cgroups)*cgroupBytes
}

// MemAvailable is the memory available for a new tree, in bytes:
// MemAvailable of /proc/meminfo, or 0 if unknown. Tests replace it.
var MemAvailable = meminfo.Available

// checkMemory is a *UsageError if the tree c sizes would take more than
// half the memory available, naming --mem-blocks and the most that fits,
// or, if the tree is too big even without memory blocks, the flags that
// size the rest. Nothing is refused when the memory available is unknown.
func checkMemory(c sysfs.SynthConfig) error {
	avail := MemAvailable()
	need, limit := treeMemory(c), avail/2
	if avail <= 0 || need <= limit {
		return nil
	}
	over := fmt.Sprintf("the tree would take about %s, more than half (%s) of the %s of memory available", size(need), size(limit), size(avail))
	if rest := need - int64(c.MemBlocks)*memBlockBytes; rest <= limit {
		return &UsageError{Err: fmt.Errorf("invalid value %d for --mem-blocks: %s; at most --mem-blocks %d fits",
			c.MemBlocks, over, (limit-rest)/memBlockBytes)}
	}
	return &UsageError{Err: fmt.Errorf("invalid values --cpus %d, --netdevs %d, --disks %d, --cgroups %d: %s even with --mem-blocks 0; give fewer",
		c.CPUs, c.Netdevs, c.Disks, c.Cgroups, over)}
}

// size is n bytes in MiB, or GiB with one decimal from 1 GiB up.
func size(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// TreeBytes is about how much memory the tree f describes takes once
// built: the synthetic tree's estimate, 0 for a host mirror (unknown
// until read).
func (f *TreeFlags) TreeBytes() int64 {
	if f.tree == "host" {
		return 0
	}
	return treeMemory(f.config())
}
