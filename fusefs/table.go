package fusefs

import (
	"sync"
	"sync/atomic"
)

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
)

// chunk is one fixed block of table slots.
type chunk[T any] struct {
	slots [chunkSize]atomic.Pointer[T]
	// live counts the non-nil slots set through CompareAndSwap, plus
	// insertions in progress; chunkReleased once the chunk has left the
	// directory. Accessed atomically.
	live atomic.Int32
}

// chunkReleased marks a chunk that has left the directory: no insertion
// may reserve a slot in it.
const chunkReleased = -1 << 30

// table maps dense uint64 keys (inode numbers, handle slots) to *T. Get is
// lock-free and allocation-free: two atomic loads and an index. Growing
// the chunk directory takes grow, which no reader ever takes. A table
// with release set frees a chunk once CompareAndSwap has emptied it, so a
// table keyed by numbers never reused (inode numbers) stays as large as
// the keys in use, not as every key ever used.
type table[T any] struct {
	chunks  atomic.Pointer[[]*chunk[T]] // copy-on-write under grow
	grow    sync.Mutex
	size    atomic.Int64 // non-nil slots; accessed atomically
	release bool         // immutable: free chunks CompareAndSwap empties
}

// chunkAt returns chunk i, or nil.
func (t *table[T]) chunkAt(i uint64) *chunk[T] {
	cs := t.chunks.Load()
	if cs == nil || i >= uint64(len(*cs)) {
		return nil
	}
	return (*cs)[i]
}

// slot returns the slot for key, or nil if its chunk does not exist.
func (t *table[T]) slot(key uint64) *atomic.Pointer[T] {
	if c := t.chunkAt(key >> chunkBits); c != nil {
		return &c.slots[key&(chunkSize-1)]
	}
	return nil
}

// Get returns the value for key, or nil. It is written out, not through
// slot, so that it fits the compiler's inlining budget: every request
// resolves a nodeid or a handle through it.
func (t *table[T]) Get(key uint64) *T {
	cs := t.chunks.Load()
	if cs == nil || key>>chunkBits >= uint64(len(*cs)) {
		return nil
	}
	if c := (*cs)[key>>chunkBits]; c != nil {
		return c.slots[key&(chunkSize-1)].Load()
	}
	return nil
}

// slotFor returns the slot for key, creating its chunk if needed. Only for
// tables without release: a released chunk's slots are not the table's.
func (t *table[T]) slotFor(key uint64) *atomic.Pointer[T] {
	return &t.chunkFor(key >> chunkBits).slots[key&(chunkSize-1)]
}

// chunkFor returns chunk i, creating it if needed.
func (t *table[T]) chunkFor(i uint64) *chunk[T] {
	if c := t.chunkAt(i); c != nil {
		return c
	}
	t.grow.Lock()
	defer t.grow.Unlock()
	var cs []*chunk[T]
	if cur := t.chunks.Load(); cur != nil {
		cs = *cur
	}
	if i >= uint64(len(cs)) {
		cs = append(make([]*chunk[T], 0, 2*(i+1)), cs...)
		cs = cs[:i+1]
	} else {
		cs = append([]*chunk[T](nil), cs...)
	}
	if cs[i] == nil {
		cs[i] = new(chunk[T])
	}
	t.chunks.Store(&cs)
	return cs[i]
}

// reserve returns chunk i with one more live slot reserved, in a chunk
// that is in the directory and stays there until the reservation ends.
func (t *table[T]) reserve(i uint64) *chunk[T] {
	for {
		c := t.chunkFor(i)
		if v := c.live.Load(); v >= 0 && c.live.CompareAndSwap(v, v+1) {
			return c
		}
		if v := c.live.Load(); v < 0 {
			t.grow.Lock() // its release is leaving the directory: wait for it
			t.grow.Unlock()
		}
	}
}

// unreserve ends one live slot of chunk i, releasing the chunk if it was
// the last and the table releases chunks.
func (t *table[T]) unreserve(i uint64, c *chunk[T]) {
	if c.live.Add(-1) != 0 || !t.release {
		return
	}
	t.grow.Lock()
	defer t.grow.Unlock()
	cs := t.chunks.Load()
	if !c.live.CompareAndSwap(0, chunkReleased) || cs == nil || (*cs)[i] != c {
		return
	}
	next := append([]*chunk[T](nil), *cs...)
	next[i] = nil
	t.chunks.Store(&next)
}

// CompareAndSwap sets key's value to new if it is old.
func (t *table[T]) CompareAndSwap(key uint64, old, new *T) bool {
	i, j := key>>chunkBits, key&(chunkSize-1)
	var c *chunk[T]
	if old == nil && new != nil {
		c = t.reserve(i)
	} else if c = t.chunkAt(i); c == nil {
		return old == nil && new == nil
	}
	if !c.slots[j].CompareAndSwap(old, new) {
		if old == nil && new != nil {
			t.unreserve(i, c)
		}
		return false
	}
	switch {
	case old == nil && new != nil:
		t.size.Add(1)
	case old != nil && new == nil:
		t.size.Add(-1)
		t.unreserve(i, c)
	}
	return true
}

// Chunks is the number of chunks in the directory.
func (t *table[T]) Chunks() int {
	n := 0
	if cs := t.chunks.Load(); cs != nil {
		for _, c := range *cs {
			if c != nil {
				n++
			}
		}
	}
	return n
}

// Len is the number of keys with a value.
func (t *table[T]) Len() int64 { return t.size.Load() }
