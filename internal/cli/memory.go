package cli

import (
	"fmt"

	"github.com/kernfsim/kernfsim/internal/meminfo"
	"github.com/kernfsim/kernfsim/sysfs"
)

// What a synthetic tree takes of the heap once built (HeapInuse), measured
// with 100,001 memory blocks, 4096 CPUs (also with 1024 NUMA nodes), 1024
// netdevs, 1024 disks and 4000 cgroup containers under mutex, rcu and
// kernfs64: 1660 to 1850 bytes a memory block (11 nodes; BenchmarkBuild's
// live heap, without partly used spans, is about 1300), 11.7 to 12.4 KiB a
// CPU (15.5 with 1024 NUMA nodes), 7.8 to 8.6 KiB a netdev, 9.6 KiB a disk,
// 15 to 16 KiB a container of --cgroups (its cgroup and half its pod's, 57
// files each). One build's HeapInuse varies by up to 15% with what earlier
// builds left in partly used spans, so each figure below is about 1.25
// times the largest seen: TestTreeMemory keeps the estimate an upper
// bound with that margin, and within twice of what a tree takes. A
// build's peak RSS is more (garbage and the collector's headroom), so the
// tree must fit in half the memory available.
const (
	memBlockBytes = 2300
	cpuBytes      = 16 << 10
	deviceBytes   = 12 << 10
	cgroupBytes   = 20 << 10
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
