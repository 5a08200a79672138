package fusefs

import (
	"sync"
	"testing"
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
