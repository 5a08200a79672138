package fusefs

import (
	"sync"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/internal/pshard"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// handle is an open attribute: the kernfsim File (its show() snapshot) and
// the mutex that serialises concurrent READs of one file descriptor.
type handle struct {
	mu   sync.Mutex
	f    *kernfsim.File // protected by mu
	fh   uint64         // immutable: slot | generation<<32
	node *kernfsim.Node // immutable
}

// handleShards spreads slot allocation so OPEN and RELEASE on different
// CPUs take different free-list locks (each its P's: pshard); READ takes
// none.
const handleShards = 16

type freeList struct {
	mu    sync.Mutex
	slots []uint32  // protected by mu
	_     [128]byte // a line's worth after the list, whatever the alignment
}

// handleTable maps a file handle to its open file. A handle is a slot in a
// lock-free table plus a generation, so a stale handle is never mistaken
// for a newer open of the same slot. Slots are reused through sharded
// free lists, so the table stays as large as the peak of open files.
type handleTable struct {
	t     table[handle]
	free  [handleShards]freeList
	next  atomic.Uint32 // next never-used slot
	gen   atomic.Uint32 // generation counter
	count atomic.Int64  // open handles
}

// add stores f and returns its handle.
func (ht *handleTable) add(f *kernfsim.File) *handle {
	slot := ht.allocSlot()
	h := &handle{f: f, node: f.Node(), fh: uint64(slot) | uint64(ht.gen.Add(1))<<32}
	ht.t.slotFor(uint64(slot)).Store(h)
	ht.count.Add(1)
	return h
}

// get returns the open file for fh, or nil for an unknown or stale one.
func (ht *handleTable) get(fh uint64) *handle {
	h := ht.t.Get(fh & 0xffffffff)
	if h == nil || h.fh != fh {
		return nil
	}
	return h
}

// remove forgets fh and returns its open file, or nil.
func (ht *handleTable) remove(fh uint64) *handle {
	slot := fh & 0xffffffff
	h := ht.get(fh)
	if h == nil || !ht.t.slotFor(slot).CompareAndSwap(h, nil) {
		return nil
	}
	ht.count.Add(-1)
	fl := &ht.free[pshard.Of(handleShards-1)]
	fl.mu.Lock()
	fl.slots = append(fl.slots, uint32(slot))
	fl.mu.Unlock()
	return h
}

func (ht *handleTable) allocSlot() uint32 {
	fl := &ht.free[pshard.Of(handleShards-1)]
	fl.mu.Lock()
	if n := len(fl.slots); n > 0 {
		s := fl.slots[n-1]
		fl.slots = fl.slots[:n-1]
		fl.mu.Unlock()
		return s
	}
	fl.mu.Unlock()
	return ht.next.Add(1)
}
