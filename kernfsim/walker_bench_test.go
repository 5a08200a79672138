package kernfsim

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/parbench"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// benchCPUs is how many cpuN directories the benchmark tree has; workers
// use cpu(i mod benchCPUs), like the seed's N/2 distinct files.
const benchCPUs = 64

// newBenchTree builds devices/system/cpu/cpuN/topology/{core_id,...} under
// lock, sealed, with attribute templates shared as the builders do.
func newBenchTree(b *testing.B, lock string) *Tree {
	s, err := locking.New(lock, locking.Options{})
	require.NoError(b, err)
	tr := New(s, Options{})
	cpu := mkpath(b, tr, "devices", "system", "cpu")
	ro := &Attr{Mode: 0o444}
	for i := range benchCPUs {
		d := testkit.Must(tr.Mkdir(cpu, fmt.Sprintf("cpu%d", i), 0o755))(b)
		topo := testkit.Must(tr.Mkdir(d, "topology", 0o755))(b)
		for _, name := range []string{"core_id", "physical_package_id", "thread_siblings_list"} {
			testkit.Must(tr.Add(topo, name, NodeSpec{Kind: KindAttr, Attr: ro, Source: Static(fmt.Sprintf("%d\n", i))}))(b)
		}
	}
	tr.Seal()
	return tr
}

// benchOps are the walker operations, as the seed benchmarks name them.
var benchOps = []struct {
	name string
	run  func(w *Walker, c Cred, i int, buf []byte) error
}{
	// files: open, read 32 bytes, close a file of one's own.
	{"files", func(w *Walker, c Cred, i int, buf []byte) error {
		_, err := w.ReadFile(c, benchPaths[i%benchCPUs], buf)
		return err
	}},
	// missing: look up one name that does not exist (ENOENT is the op).
	{"missing", func(w *Walker, c Cred, i int, buf []byte) error {
		// The errno form, as a system call returns it: an error value
		// would be an allocation per op (BenchmarkSuspect/part=missing).
		if _, e := w.ResolveErrno(c, "devices/system/cpu/does_not_exist"); e != syscall.ENOENT {
			return fmt.Errorf("missing path: got errno %v, want ENOENT", e)
		}
		return nil
	}},
	// resolve: lookup/revalidate/permission of an existing path, no open.
	{"resolve", func(w *Walker, c Cred, i int, buf []byte) error {
		_, err := w.Resolve(c, benchPaths[i%benchCPUs])
		return err
	}},
}

var benchPaths = func() []string {
	p := make([]string, benchCPUs)
	for i := range p {
		p[i] = fmt.Sprintf("devices/system/cpu/cpu%d/topology/core_id", i)
	}
	return p
}()

// BenchmarkWalk runs every walker operation under every strategy, serially
// and in parallel. The parallel/goroutines=48 variant reproduces the
// seed's 48 threads on however many CPUs -cpu gives.
//
//	go test -run x -bench Walk -cpu 1,2 ./kernfsim/ | benchstat -col /lock -
func BenchmarkWalk(b *testing.B) {
	user := Cred{Uid: 1000, Gid: 1000}
	for _, lock := range locking.Names {
		tr := newBenchTree(b, lock)
		for _, op := range benchOps {
			b.Run(fmt.Sprintf("lock=%s/op=%s", lock, op.name), func(b *testing.B) {
				w, buf := NewWalker(tr, WalkerOptions{}), make([]byte, 32)
				runtime.GC() // the setup's garbage (trees, earlier walkers' hash tables) is not the op's
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := op.run(w, user, i, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, g := range []int{0, 48} {
				name := fmt.Sprintf("lock=%s/op=%s/parallel", lock, op.name)
				if g > 0 {
					name += fmt.Sprintf("/goroutines=%d", g)
				}
				b.Run(name, func(b *testing.B) { benchParallel(b, tr, op.run, user, g) })
			}
		}
	}
}

// benchParallel runs op from goroutines workers (GOMAXPROCS if 0) over
// one walker, each with a buffer of its own. It uses parbench.Run, not
// b.RunParallel, whose shared iteration counter and neighbouring
// testing.PBs would be shared writes of the harness's own.
func benchParallel(b *testing.B, tr *Tree, op func(*Walker, Cred, int, []byte) error, c Cred, goroutines int) {
	w := NewWalker(tr, WalkerOptions{})
	runtime.GC() // the setup's garbage (trees, earlier walkers' hash tables) is not the op's
	b.ReportAllocs()
	parbench.Run(b, goroutines, func(i int) func() {
		buf, failed := parbench.Buffer(32), false
		return func() {
			if failed {
				return
			}
			if err := op(w, c, i, buf); err != nil {
				b.Error(err)
				failed = true
			}
		}
	})
}
