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
type chunk[T any] [chunkSize]atomic.Pointer[T]

// table maps dense uint64 keys (inode numbers, handle slots) to *T. Get is
// lock-free and allocation-free: two atomic loads and an index. Growing
// the chunk directory takes grow, which no reader ever takes.
type table[T any] struct {
	chunks atomic.Pointer[[]*chunk[T]] // copy-on-write under grow
	grow   sync.Mutex
	size   atomic.Int64 // non-nil slots; accessed atomically
}

// slot returns the slot for key, or nil if its chunk does not exist.
func (t *table[T]) slot(key uint64) *atomic.Pointer[T] {
	cs := t.chunks.Load()
	i := key >> chunkBits
	if cs == nil || i >= uint64(len(*cs)) || (*cs)[i] == nil {
		return nil
	}
	return &(*cs)[i][key&(chunkSize-1)]
}

// Get returns the value for key, or nil.
func (t *table[T]) Get(key uint64) *T {
	if s := t.slot(key); s != nil {
		return s.Load()
	}
	return nil
}

// slotFor returns the slot for key, creating its chunk if needed.
func (t *table[T]) slotFor(key uint64) *atomic.Pointer[T] {
	if s := t.slot(key); s != nil {
		return s
	}
	t.grow.Lock()
	defer t.grow.Unlock()
	i := key >> chunkBits
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
	return &cs[i][key&(chunkSize-1)]
}

// CompareAndSwap sets key's value to new if it is old.
func (t *table[T]) CompareAndSwap(key uint64, old, new *T) bool {
	if !t.slotFor(key).CompareAndSwap(old, new) {
		return false
	}
	switch {
	case old == nil && new != nil:
		t.size.Add(1)
	case old != nil && new == nil:
		t.size.Add(-1)
	}
	return true
}

// Len is the number of keys with a value.
func (t *table[T]) Len() int64 { return t.size.Load() }
