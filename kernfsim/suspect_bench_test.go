package kernfsim

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kernfsim/kernfsim/internal/parbench"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// BenchmarkSuspect isolates each write the rcu walker's files and missing
// operations make, or once made, outside the tree's read-only data, each
// on every CPU at once, so that -cpu 1,2 shows which of them stops scaling
// (a part whose ns/op does not halve at -cpu 2 writes a line the CPUs
// share):
//
//	go test -run '^$' -bench Suspect -cpu 1,2 -count 5 ./kernfsim/ | benchstat -col .name -
//
// The read side's shard choice is BenchmarkGraceRead in locking.
func BenchmarkSuspect(b *testing.B) {
	tr := newBenchTree(b, "rcu")
	w := NewWalker(tr, WalkerOptions{})
	user := Cred{Uid: 1000, Gid: 1000}
	const missing = "devices/system/cpu/does_not_exist"
	if _, e := w.ResolveErrno(user, missing); e == 0 {
		b.Fatal("missing path resolved")
	}
	nodes := make([]*Node, benchCPUs)
	for i, p := range benchPaths {
		nodes[i] = testkit.Must(w.Resolve(user, p))(b)
	}
	parts := []struct {
		name string
		op   func(i int)
	}{
		// The machine's ceiling: private arithmetic of about a walk's
		// length that writes no memory at all. What it loses going from
		// one CPU to two is the machine's (hypervisor, timer ticks, the
		// benchmark's own goroutines), not the walker's.
		{"ceiling", func(i int) {
			if ceilingWork(uint64(i)) == 0 {
				panic("ceilingWork reached 0")
			}
		}},
		// The same for loads: a chase through a private, L1-resident ring
		// of pointers, as a walk chases dentries and nodes. A machine
		// whose two vCPUs share a core's load ports loses here what
		// private arithmetic does not.
		{"ceiling/loads", func(i int) {
			if chaseRing(i) < 0 {
				panic("chaseRing")
			}
		}},
		// The read section, on the calling P's own shard.
		{"readside", func(int) { tr.runlock(tr.rlock()) }},
		// An active reference on the worker's own file, and on one file
		// every worker shares (a true sharing, as kernfs's kn->active).
		{"active/node=own", func(i int) { activeRef(tr, nodes[i%benchCPUs]) }},
		{"active/node=shared", func(int) { activeRef(tr, nodes[0]) }},
		// The File from its sync.Pool and back.
		{"pool", func(int) { filePool.Put(filePool.Get()) }},
		// open(2) minus the walk: may_open, the File, release.
		{"open", func(i int) { benchOpen(tr, nodes[i%benchCPUs], user) }},
		// The cached negative dentry of the missing name, revalidated.
		{"negative", func(int) { benchNegative(w, "devices/system/cpu", "does_not_exist") }},
		// The missing walk, with an error value and with an errno.
		{"missing/api=error", func(int) { _, _ = w.Resolve(user, missing) }},
		{"missing/api=errno", func(int) { _, _ = w.ResolveErrno(user, missing) }},
	}
	for _, p := range parts {
		b.Run(fmt.Sprintf("part=%s/parallel", p.name), func(b *testing.B) {
			b.ReportAllocs()
			parbench.Run(b, 0, func(i int) func() { return func() { p.op(i) } })
		})
	}
}

// rings are the ceiling/loads part's private rings, one per worker: 512
// slots of 8 bytes (4 KiB) linked in a fixed shuffled order, each ring a
// separate allocation.
var rings = func() [][]int {
	r := make([][]int, 256)
	for w := range r {
		perm := rand.New(rand.NewPCG(uint64(w), 1)).Perm(512)
		ring := make([]int, 512)
		for k := range perm {
			ring[perm[k]] = perm[(k+1)%len(perm)]
		}
		r[w] = ring
	}
	return r
}()

// chaseRing follows 128 links of worker i's ring and returns where it
// stopped.
//
//go:noinline
func chaseRing(i int) int {
	ring, at := rings[i%len(rings)], 0
	for range 128 {
		at = ring[at]
	}
	return at
}

// ceilingWork is 128 rounds of a linear congruential generator: a chain of
// dependent multiplications (a few hundred nanoseconds) touching no memory.
//
//go:noinline
func ceilingWork(x uint64) uint64 {
	for range 128 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

func activeRef(tr *Tree, n *Node) {
	if !n.tryGetActive() {
		panic("benchmark node removed")
	}
	tr.putActive(n)
}

func benchOpen(tr *Tree, n *Node, c Cred) {
	f, e := tr.open(n, os.O_RDONLY, c)
	if e != 0 {
		panic(&fs.PathError{Op: "open", Path: n.Path(), Err: e})
	}
	f.Release()
}

// benchNegative finds the cached negative entry of base in dir and
// revalidates it, as a walk's last step does.
func benchNegative(w *Walker, dir, base string) {
	parent := w.root
	for rest := dir; rest != "" && parent != nil; {
		var c string
		c, rest = nextComponent(rest)
		parent = w.cache.get(parent, c, nameHash(c))
	}
	var d *dentry
	if parent != nil {
		d = w.cache.get(parent, base, nameHash(base))
	}
	if d == nil || d.node != nil || !revalidateLocked(parent.node, base, nil, d.rev) {
		panic("no valid negative entry for " + dir + "/" + base)
	}
}
