package kernfsim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/locking"
)

// TestIndexModel checks a directory's index against a sorted list through
// random inserts (one at a time and in batches) and removals that cross
// smallDir both ways, with hashes drawn from a few values so that names
// share hashes (which nameHash makes too rare to meet): find finds every
// name and no other, each gives (hash, ino) order from any offset, and a
// published index never changes.
func TestIndexModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 31))
	dir := &Node{kind: KindDir}
	dir.ext = &dirData{}
	var x *index
	var want []entry
	var published []*index
	var snapshots [][]entry
	ino := uint64(0)
	for step := range 3000 {
		if len(want) > 0 && (rng.IntN(3) == 0 || len(want) > 3*smallDir) {
			e := want[rng.IntN(len(want))]
			x = x.remove(e)
			want = slices.DeleteFunc(want, func(o entry) bool { return o.node == e.node })
		} else {
			var batch []entry
			for range 1 + rng.IntN(3)*rng.IntN(8) { // mostly one, sometimes a batch (insertAll)
				ino++
				n := &Node{kind: KindAttr, ino: rng.Uint64()>>1 | 1} // out of order, as a renamed node's
				n.id0 = identity{parent: dir, name: "n" + strconv.FormatUint(ino, 10)}
				n.ident.Store(&n.id0)
				batch = append(batch, entry{hash: uint64(FirstOffset + rng.IntN(40)), node: n})
			}
			slices.SortFunc(batch, cmpKey)
			if len(batch) == 1 {
				x = x.insert(batch[0])
			} else {
				x = x.insertAll(batch)
			}
			want = append(want, batch...)
			slices.SortFunc(want, cmpKey)
		}
		checkIndex(t, step, x, dir, want, rng)
		if step%97 == 0 {
			published, snapshots = append(published, x), append(snapshots, slices.Clone(want))
		}
	}
	for i, p := range published {
		require.Equal(t, snapshots[i], listIndex(p, 0), "published index %d changed after later writes", i)
	}
}

func checkIndex(t *testing.T, step int, x *index, dir *Node, want []entry, rng *rand.Rand) {
	t.Helper()
	for _, e := range want {
		if got := x.find(dir, e.hash, e.node.id0.name); got != e.node {
			t.Fatalf("step %d: find(%d, %q) = %v, want node %d", step, e.hash, e.node.id0.name, got, e.node.ino)
		}
		if got := x.find(dir, e.hash, e.node.id0.name+"x"); got != nil {
			t.Fatalf("step %d: find of a missing name found node %d", step, got.ino)
		}
	}
	after := uint64(rng.IntN(FirstOffset + 41))
	i, _ := slices.BinarySearchFunc(want, after+1, func(e entry, h uint64) int { return cmp.Compare(e.hash, h) })
	if got := listIndex(x, after); !slices.Equal(got, want[i:]) && (len(got) > 0 || len(want[i:]) > 0) {
		t.Fatalf("step %d: each(%d) gave %s, want %s", step, after, keys(got), keys(want[i:]))
	}
}

func listIndex(x *index, after uint64) []entry {
	var got []entry
	x.each(after, func(e entry) bool { got = append(got, e); return true })
	return got
}

func keys(es []entry) string {
	s := ""
	for _, e := range es {
		s += fmt.Sprintf(" %d/%d", e.hash, e.node.ino)
	}
	return s
}

// TestRenameListing checks what a directory shows around a rename, within
// a directory and across directories, in small and big directories: the
// new name after, the old one never, and every other child still.
func TestRenameListing(t *testing.T) {
	for _, size := range []int{3, smallDir, 3 * smallDir} {
		for _, lock := range writers {
			tr := newTestTree(t, lock)
			a, b := mkpath(t, tr, "a"), mkpath(t, tr, "b")
			entries := make([]BatchEntry, size)
			for i := range entries {
				entries[i] = BatchEntry{Name: "f" + strconv.Itoa(i), Spec: NodeSpec{Kind: KindAttr, Source: Static("")}}
			}
			nodes, err := tr.AddBatch(a, entries)
			require.NoError(t, err)
			require.NoError(t, tr.Rename(nodes[0], a, "g"))
			require.NoError(t, tr.Rename(nodes[1], b, "h"))
			names := func(d *Node) []string {
				var s []string
				require.NoError(t, tr.Readdir(d, 0, func(e Dirent) bool { s = append(s, e.Name); return true }))
				slices.Sort(s)
				return s
			}
			want := []string{"g"}
			for i := 2; i < size; i++ {
				want = append(want, "f"+strconv.Itoa(i))
			}
			slices.Sort(want)
			require.Equal(t, want, names(a), "lock=%s size=%d: a after renames", lock, size)
			require.Equal(t, []string{"h"}, names(b), "lock=%s size=%d: b after renames", lock, size)
			for _, c := range []struct {
				dir  *Node
				name string
				want *Node
			}{{a, "f0", nil}, {a, "g", nodes[0]}, {a, "f1", nil}, {b, "h", nodes[1]}} {
				got, _ := tr.LookupErrno(c.dir, c.name)
				require.Equal(t, c.want, got, "lock=%s size=%d: lookup %s", lock, size, c.name)
			}
			require.NoError(t, tr.Rename(nodes[0], a, "f0"), "renaming back")
			got, _ := tr.LookupErrno(a, "f0")
			require.Equal(t, nodes[0], got, "lock=%s size=%d: f0 renamed back", lock, size)
		}
	}
}

// TestHotPathAllocs checks that looking up, revalidating, getting the
// attributes of and reading an attribute allocate nothing per call, under
// every strategy (the per-request path of a server; BenchmarkWalk and
// fusefs's BenchmarkServeOp report the same as allocs/op).
func TestHotPathAllocs(t *testing.T) {
	for _, lock := range locking.Names {
		tr := newTestTree(t, lock)
		d := mkpath(t, tr, "devices", "cpu0")
		_, err := tr.AddAttr(d, "online", 0o644, NewValue("1\n"))
		require.NoError(t, err)
		tr.Seal()
		buf := make([]byte, 64)
		for name, fn := range map[string]func(){
			"LookupErrno": func() { tr.LookupErrno(d, "online") },
			"missing":     func() { tr.LookupErrno(d, "offline") },
			"LookupAttr":  func() { tr.LookupAttr(d, "online") },
			"Revalidate": func() {
				n, _ := tr.LookupErrno(d, "online")
				tr.Revalidate(d, "online", n, 0)
			},
			"Getattr": func() { tr.Getattr(d) },
			"Read": func() {
				n, _ := tr.LookupErrno(d, "online")
				f, err := tr.Open(n, 0, RootCred)
				if err == nil {
					f.Read(buf, 0)
					f.Release()
				}
			},
		} {
			if got := testing.AllocsPerRun(100, fn); got != 0 {
				t.Errorf("lock=%s %s: %v allocations a call, want 0", lock, name, got)
			}
		}
	}
}

// TestSortEntries checks that sortEntries, given a batch's entries (inode
// numbers rising with position), orders them by (hash, ino) as cmpKey
// does, at sizes on both sides of smallSort, with uniform hashes, with
// hashes drawn from a few values (many ties), and with hashes at the ends
// of nameHash's range.
func TestSortEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	draws := map[string]func() uint64{
		"uniform": func() uint64 { return rng.Uint64() >> 1 },
		"ties":    func() uint64 { return uint64(FirstOffset + rng.IntN(5)) },
		"ends": func() uint64 {
			return []uint64{FirstOffset, math.MaxInt64 - 1, math.MaxInt64 / 2}[rng.IntN(3)]
		},
	}
	for name, draw := range draws {
		for _, n := range []int{0, 1, 2, 7, smallSort, smallSort + 1, 200, 5000} {
			nodes := make([]Node, n)
			es := make([]entry, n)
			for i := range es {
				nodes[i].ino = uint64(i + 1)
				es[i] = entry{hash: draw(), node: &nodes[i]}
			}
			want := slices.SortedFunc(slices.Values(es), cmpKey)
			got := sortEntries(es)
			if !slices.Equal(got, want) {
				t.Errorf("%s, %d entries: sortEntries differs from sorting by (hash, ino)", name, n)
			}
		}
	}
}
