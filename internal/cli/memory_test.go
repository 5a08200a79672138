package cli

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// heapInuse is HeapInuse after collecting all garbage.
func heapInuse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestTreeMemory keeps treeMemory's figures an upper bound of what a tree
// takes, and within twice of it, under every lock.
func TestTreeMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds trees of 10000 memory blocks")
	}
	for _, c := range []sysfs.SynthConfig{
		{MemBlocks: 10000},
		{CPUs: 1024, MemBlocks: 1, Netdevs: 256, Disks: 256},
		{CPUs: 4, Sockets: 1, MemBlocks: 1, Cgroups: 2000},
	} {
		c = c.WithDefaults()
		for _, lock := range locking.Names {
			before := heapInuse()
			a, err := sysfs.Assemble(sysfs.Options{Lock: lock, Synth: c, ABI: true})
			if err != nil {
				t.Fatal(err)
			}
			got := heapInuse() - before
			runtime.KeepAlive(a)
			est := treeMemory(c)
			t.Logf("lock=%s %d blocks, %d CPUs: %d bytes of heap, estimate %d", lock, c.MemBlocks, c.CPUs, got, est)
			if got > est || 2*got < est {
				t.Errorf("lock=%s %+v: the tree takes %d bytes of heap, the estimate is %d: update the figures in memory.go", lock, c, got, est)
			}
		}
	}
}

func TestCheckMemory(t *testing.T) {
	defer func(f func() int64) { MemAvailable = f }(MemAvailable)
	def := sysfs.SynthConfig{}.WithDefaults()
	big, huge := def, def
	big.MemBlocks, huge.CPUs = sysfs.MaxSynthMemBlocks, sysfs.MaxSynthCPUs
	for _, c := range []struct {
		avail int64
		c     sysfs.SynthConfig
		want  []string // "" for no error
	}{
		{0, big, nil}, // unknown: nothing refused
		{16 << 30, big, nil},
		{1 << 30, def, nil},
		{1 << 30, big, []string{"invalid value 1048576 for --mem-blocks", "about 1.7 GiB", "half (512 MiB) of the 1.0 GiB", "at most --mem-blocks 313898"}},
		{200 << 20, huge, []string{"--cpus 8192", "--netdevs 4", "even with --mem-blocks 0"}},
	} {
		MemAvailable = func() int64 { return c.avail }
		err := checkMemory(c.c)
		var ue *UsageError
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%d bytes available, %d blocks: got %v, want no error", c.avail, c.c.MemBlocks, err)
		case c.want != nil && !errors.As(err, &ue):
			t.Errorf("%d bytes available, %d blocks: got %v, want a usage error", c.avail, c.c.MemBlocks, err)
		}
		for _, w := range c.want {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%d bytes available: got %q, want it to say %q", c.avail, err, w)
			}
		}
	}
}

// TestCheckMemoryFits checks that the largest --mem-blocks the error names
// fits, and one more does not.
func TestCheckMemoryFits(t *testing.T) {
	defer func(f func() int64) { MemAvailable = f }(MemAvailable)
	MemAvailable = func() int64 { return 1 << 30 }
	c := sysfs.SynthConfig{MemBlocks: sysfs.MaxSynthMemBlocks}.WithDefaults()
	var fit int
	testkit.Must(fmt.Sscanf(checkMemory(c).Error()[strings.Index(checkMemory(c).Error(), "at most"):], "at most --mem-blocks %d fits", &fit))(t)
	c.MemBlocks = fit
	assert.NoError(t, checkMemory(c), "--mem-blocks %d, said to fit", fit)
	c.MemBlocks++
	if err := checkMemory(c); err == nil {
		t.Errorf("--mem-blocks %d, one more than fits: no error", c.MemBlocks)
	}
}
