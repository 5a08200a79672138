package locking_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/parbench"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// walkCPUs is how many cpuN the walks spread over: worker i reads
// cpu(i mod walkCPUs), as loadgen's files op gives each thread its own.
const walkCPUs = 64

// walkCounting are the sim's operations, as loadgen's sim target makes
// them (kernfsim.Walker's errno forms, no allocation per failure).
var walkCounting = []struct {
	name string
	run  func(w *kernfsim.Walker, c kernfsim.Cred, i int, buf []byte) syscall.Errno
}{
	{"files", func(w *kernfsim.Walker, c kernfsim.Cred, i int, buf []byte) syscall.Errno {
		_, e := w.ReadFileErrno(c, walkPaths[i%walkCPUs], buf)
		return e
	}},
	{"stat", func(w *kernfsim.Walker, c kernfsim.Cred, i int, buf []byte) syscall.Errno {
		_, e := w.StatErrno(c, walkPaths[i%walkCPUs])
		return e
	}},
	{"missing", func(w *kernfsim.Walker, c kernfsim.Cred, i int, buf []byte) syscall.Errno {
		if _, e := w.StatErrno(c, "devices/system/cpu/does_not_exist"); e != syscall.ENOENT {
			return e | syscall.EINVAL // not the ENOENT that is the op
		}
		return 0
	}},
}

var walkPaths = func() []string {
	p := make([]string, walkCPUs)
	for i := range p {
		p[i] = fmt.Sprintf("devices/system/cpu/cpu%d/topology/core_id", i)
	}
	return p
}()

// BenchmarkWalkCounting is the sim's per-operation cost (loadgen's sim
// target: the in-process walker over the default synthetic sysfs) with
// the lock counters off, on (hold time sampled at the default rate) and
// exact (every hold timed), under every strategy, serially and on every
// CPU:
//
//	go test -run '^$' -bench WalkCounting -count 10 -cpu 1,2 ./locking/ | tee walk.txt
//	benchstat -col /stats walk.txt
func BenchmarkWalkCounting(b *testing.B) {
	user := kernfsim.Cred{Uid: 1000, Gid: 1000} // loadgen.DefaultSimCred
	for _, lock := range locking.Names {
		for _, stats := range []struct {
			name string
			opts locking.Options
		}{
			{"on", locking.Options{}},
			{"off", locking.Options{NoStats: true}},
			{"exact", locking.Options{HoldSampleEvery: 1}},
		} {
			w := newSimWalker(b, lock, stats.opts)
			for _, op := range walkCounting {
				name := fmt.Sprintf("lock=%s/stats=%s/op=%s", lock, stats.name, op.name)
				b.Run(name, func(b *testing.B) {
					buf := make([]byte, 32)
					warmUp(b, w, op.run, user, buf)
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						if e := op.run(w, user, i, buf); e != 0 {
							b.Fatal(e)
						}
					}
				})
				b.Run(name+"/parallel", func(b *testing.B) {
					warmUp(b, w, op.run, user, make([]byte, 32))
					b.ReportAllocs()
					parbench.Run(b, 0, func(id int) func() {
						buf, i, failed := parbench.Buffer(32), id, false
						return func() {
							if e := op.run(w, user, i, buf); e != 0 && !failed {
								b.Error(e)
								failed = true
							}
						}
					})
				})
			}
		}
	}
}

// newSimWalker builds the default synthetic sysfs under lock with opts,
// sealed, and a walker over it as loadgen's sim target makes one.
func newSimWalker(b *testing.B, lock string, opts locking.Options) *kernfsim.Walker {
	s, err := locking.New(lock, opts)
	require.NoError(b, err)
	tr := kernfsim.New(s, kernfsim.Options{})
	require.NoError(b, sysfs.BuildSynthetic(tr, sysfs.SynthConfig{}.WithDefaults()))
	tr.Seal()
	return kernfsim.NewWalker(tr, kernfsim.WalkerOptions{MountDepth: 1}) // loadgen's sysMountDepth
}

// warmUp runs op once on every path, so that the dentries a walk caches
// on first sight are not the op's allocations, then collects the setup's
// garbage.
func warmUp(b *testing.B, w *kernfsim.Walker, op func(*kernfsim.Walker, kernfsim.Cred, int, []byte) syscall.Errno, c kernfsim.Cred, buf []byte) {
	for i := range walkCPUs {
		if e := op(w, c, i, buf); e != 0 {
			b.Fatal(e)
		}
	}
	runtime.GC()
}
