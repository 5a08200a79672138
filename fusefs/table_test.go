package fusefs

import (
	"sync"
	"testing"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// TestTableReleasesEmptiedChunks fills a releasing table with keys that
// are never reused, as nodeids are, and empties it again: the chunks must
// go back (they used to stay, 32 KiB per 4096 nodeids ever looked up),
// and every key must read back what was stored while it was stored.
func TestTableReleasesEmptiedChunks(t *testing.T) {
	tb := table[int]{release: true}
	keep := 7
	tb.CompareAndSwap(1, nil, &keep) // the root, pinned
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for k := uint64(2 + w); k < 20*chunkSize; k += 4 {
				v := int(k)
				if !tb.CompareAndSwap(k, nil, &v) {
					t.Errorf("key %d: insert refused", k)
					return
				}
				if got := tb.Get(k); got != &v {
					t.Errorf("key %d: got %v after insert, want %d", k, got, v)
					return
				}
				if !tb.CompareAndSwap(k, &v, nil) {
					t.Errorf("key %d: removal refused", k)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := tb.Chunks(); got != 1 {
		t.Errorf("chunks after every key but one was removed: got %d, want 1", got)
	}
	if got := tb.Len(); got != 1 {
		t.Errorf("Len: got %d, want 1", got)
	}
	if got := tb.Get(1); got != &keep {
		t.Errorf("pinned key: got %v, want %d", got, keep)
	}
}

// TestTableWithoutReleaseKeepsChunks checks that a table whose slots are
// set directly (handle slots, reused) never loses a chunk.
func TestTableWithoutReleaseKeepsChunks(t *testing.T) {
	var tb table[int]
	v := 1
	tb.slotFor(5 * chunkSize).Store(&v)
	tb.CompareAndSwap(3, nil, &v)
	tb.CompareAndSwap(3, &v, nil)
	if got := tb.Get(5 * chunkSize); got != &v {
		t.Fatalf("got %v, want the value stored", got)
	}
	if got := tb.Chunks(); got != 2 {
		t.Fatalf("chunks: got %d, want 2", got)
	}
}

// TestNodeTableRefForget races LOOKUP references with FORGETs on a few
// nodes: a node stays resolvable while its looker holds a reference
// (a forget that emptied another's entry must not take a live one with
// it), and once every reference is forgotten the table is back to the
// pinned root.
func TestNodeTableRefForget(t *testing.T) {
	tr, _ := newServedTree(t, "rcu")
	var nodes []*kernfsim.Node
	for _, name := range []string{"devices", "kernel"} {
		n, err := tr.Lookup(tr.Root(), name)
		if err != nil {
			t.Skipf("no %s in the served tree: %v", name, err)
		}
		nodes = append(nodes, n)
	}
	var nt nodeTable
	nt.t.release = true
	nt.pin(tr.Root())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20000 {
				n := nodes[(w+i/64)%len(nodes)]
				held := 1 + i%2
				for range held {
					nt.ref(n)
				}
				if got := nt.get(n.Ino()); got != n {
					t.Errorf("node %d unresolvable while %d lookups are held", n.Ino(), held)
					return
				}
				nt.forget(n.Ino(), uint64(held))
			}
		})
	}
	wg.Wait()
	if got := nt.len(); got != 1 {
		t.Errorf("table after every lookup was forgotten: got %d entries, want 1 (the root)", got)
	}
}
