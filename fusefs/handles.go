package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/kernfsim/kernfsim/internal/pshard"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// handle is one slot of the handle table: while open, an attribute's
// kernfsim File (its show() snapshot) and the mutex that serialises
// concurrent READs of one file descriptor. Slots live in the table's
// slabs and are reused, so an OPEN allocates nothing; a handle takes a
// cache line of its own, so two CPUs serving their own files write no
// line in common (as kernfsim.File).
type handle struct {
	handleState
	_ [handleLine - unsafe.Sizeof(handleState{})%handleLine]byte
}

type handleState struct {
	mu sync.Mutex
	// f is the open file: written by add before fh publishes the slot
	// (the slot came off a free list, so no reader can reach it), then
	// protected by mu; remove clears it under mu.
	f *kernfsim.File
	// fh is the handle (slot | gen<<32) while open, 0 while the slot is
	// free. Accessed atomically; READ and WRITE check it again under mu,
	// so a stale handle never reaches a newer open's file.
	fh atomic.Uint64
	// gen counts the slot's opens: written only by add, which owns the
	// slot (it came off a free list), so an OPEN writes no line but its
	// slot's and its free list's.
	gen uint32
}

const handleLine = 64

// handleSlabBits sizes a slab: 256 handles, 16 KiB.
const handleSlabBits = 8

type handleSlab [1 << handleSlabBits]handle

// handleShards spreads slot allocation so OPEN and RELEASE on different
// CPUs take different free-list locks (each its P's: pshard); READ takes
// none.
const handleShards = 16

type freeList struct {
	mu    sync.Mutex
	slots []uint32  // protected by mu
	_     [128]byte // a line's worth after the list, whatever the alignment
}

// handleTable maps a file handle to its open file. A handle is a slot in
// a slab plus the slot's generation, so a stale handle is never mistaken
// for a newer open of the same slot. The slabs are found through a lock-free
// table (two atomic loads and two indexes, no hashing); slots are reused
// through sharded free lists, so the table stays as large as the peak of
// open files, and an OPEN, READ or RELEASE allocates nothing once the
// peak's slabs exist (TestHandleTableReusesSlots).
type handleTable struct {
	slabs table[handleSlab] // never released: slots are reused
	free  [handleShards]freeList
	next  atomic.Uint32 // next never-used slot (slot 0 is never used)
	count atomic.Int64  // open handles
}

// slot returns the handle in slot, creating its slab if needed.
func (ht *handleTable) slot(slot uint32) *handle {
	s := ht.slabs.slotFor(uint64(slot >> handleSlabBits))
	slab := s.Load()
	if slab == nil {
		s.CompareAndSwap(nil, new(handleSlab))
		slab = s.Load()
	}
	return &slab[slot&(1<<handleSlabBits-1)]
}

// add stores f and returns its handle.
func (ht *handleTable) add(f *kernfsim.File) uint64 {
	slot := ht.allocSlot()
	h := ht.slot(slot)
	h.gen++
	fh := uint64(slot) | uint64(h.gen)<<32 // never 0: slot 0 is never used
	h.f = f
	h.fh.Store(fh)
	ht.count.Add(1)
	return fh
}

// get returns the handle for fh, or nil for an unknown or stale one.
func (ht *handleTable) get(fh uint64) *handle {
	if fh == 0 {
		return nil
	}
	slab := ht.slabs.Get((fh & 0xffffffff) >> handleSlabBits)
	if slab == nil {
		return nil
	}
	h := &slab[fh&(1<<handleSlabBits-1)]
	if h.fh.Load() != fh {
		return nil
	}
	return h
}

// remove forgets fh and returns its open file, or nil. No READ of fh is
// running once it returns, and none will reach the file.
func (ht *handleTable) remove(fh uint64) *kernfsim.File {
	h := ht.get(fh)
	if h == nil || !h.fh.CompareAndSwap(fh, 0) {
		return nil
	}
	h.mu.Lock()
	f := h.f
	h.f = nil
	h.mu.Unlock()
	ht.count.Add(-1)
	fl := &ht.free[pshard.Of(handleShards-1)]
	fl.mu.Lock()
	fl.slots = append(fl.slots, uint32(fh))
	fl.mu.Unlock()
	return f
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

// read is one READ of fh's file under h.mu: EBADF if fh was released
// meanwhile. The unlock is deferred: a Show that panics (answered EIO by
// the transport) must not leave the handle locked, or its RELEASE would
// hang a queue.
func (h *handle) read(fh uint64, cancel <-chan struct{}, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fh.Load() != fh {
		return 0, syscall.EBADF
	}
	return h.f.ReadInterruptible(cancel, p, off)
}

// write is one WRITE under h.mu, checked and unlocked as read is.
func (h *handle) write(fh uint64, data []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fh.Load() != fh {
		return 0, syscall.EBADF
	}
	return h.f.Write(context.Background(), data)
}
