package loadgen

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// rawFile is what the original's single run reads on this machine.
const rawFile = "/sys/devices/system/cpu/cpu0/topology/core_id"

// rawLoop is the minimal loop loadgen is measured against: n x open, one
// 32-byte read, close, with nothing else.
func rawLoop(n int, buf []byte) error {
	for range n {
		fd, err := unix.Open(rawFile, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if _, err := unix.Read(fd, buf); err != nil {
			return err
		}
		unix.Close(fd)
	}
	return nil
}

// loadgenPerOp is loadgen's single per-op over rawLoop's file, its single
// worker pinned as rawPerOp's loop is.
func loadgenPerOp(n int) (time.Duration, error) {
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Threads: 1, Times: n,
		FileList: []string{"devices/system/cpu/cpu0/topology/core_id"}, PinSingle: true})
	return r.SinglePerOp(), err
}

// BenchmarkRawSyscalls and BenchmarkLoadgenSingle compare loadgen's single
// run against /sys with the minimal loop (go test -bench . -run '^$'):
// loadgen's own overhead per operation is the difference. (A speed bound
// belongs here, not in a unit test: on a loaded machine no bound holds.)
func BenchmarkRawSyscalls(b *testing.B) {
	requireSysB(b)
	unlock, err := lockThread(0) // on CPU 0, as loadgenPerOp's single worker
	if err != nil {
		b.Fatal(err)
	}
	defer unlock()
	buf := make([]byte, workload.DefaultBufSize)
	b.ResetTimer()
	if err := rawLoop(b.N, buf); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkLoadgenSingle(b *testing.B) {
	requireSysB(b)
	d, err := loadgenPerOp(max(b.N, 100))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d), "ns/op")
}

func requireSysB(b *testing.B) {
	if err := unix.Access(rawFile, unix.R_OK); err != nil {
		b.Skip(rawFile, err)
	}
}
