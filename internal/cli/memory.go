package cli

import (
	"fmt"

	"github.com/kernfsim/kernfsim/internal/meminfo"
	"github.com/kernfsim/kernfsim/sysfs"
)

// The heap a synthetic tree takes once built, per part: about 1.25 times
// the most measured (docs/performance.md, "Figures without a script"),
// as one build's heap varies with what earlier builds left. TestTreeMemory
// keeps the estimate an upper bound, and within twice of what a tree
// takes. A build's peak RSS is more, so the tree must fit in half the
// memory available.
const (
	memBlockBytes = 1700
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
