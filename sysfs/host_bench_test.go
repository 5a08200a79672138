package sysfs

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// BenchmarkMirrorHost mirrors this host's /sys into a fresh tree per
// iteration, and reports the time and the process's CPU time (user and
// system, which a loaded machine disturbs less than the wall clock) per
// entry mirrored.
func BenchmarkMirrorHost(b *testing.B) {
	if _, err := os.Stat("/sys/devices"); err != nil {
		b.Skipf("no /sys: %v", err)
	}
	var entries int64
	cpu0 := cpuTime(b)
	start := time.Now()
	for b.Loop() {
		tr := kernfsim.New(locking.MustNew("mutex"), kernfsim.Options{})
		if _, err := MirrorHost(tr, "/sys", MirrorOptions{}); err != nil {
			b.Fatal(err)
		}
		entries += tr.Nodes()
	}
	reportPerEntry(b, entries, start, cpu0)
}

// reportPerEntry reports the time and the CPU time since start and cpu0
// per entry, and the entries per iteration.
func reportPerEntry(b *testing.B, entries int64, start time.Time, cpu0 time.Duration) {
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(entries), "ns/entry")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(entries), "cpu-ns/entry")
	b.ReportMetric(float64(entries)/float64(b.N), "entries")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
