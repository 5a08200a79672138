package loadgen

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// simProcess is what the sim's workers share as threads of one process,
// as the seed's threads shared theirs, and what the kernel writes there on
// every open(2), before and after it walks (Target.SimShared):
//
//   - the descriptor table (files_struct, fdTable below);
//   - the credentials (struct cred): the struct file an open allocates
//     before it walks holds a reference on the opener's cred (get_cred in
//     init_file), dropped when the file is freed, at close or when the
//     open fails; threads share one cred, so its usage count's line is
//     every worker's.
//
// A nil *simProcess makes none of these writes.
type simProcess struct {
	fds  *fdTable
	_    [cacheLine]byte
	cred atomic.Int64 // accessed atomically: struct cred's usage count
	_    [cacheLine - 8]byte
}

func newSimProcess(workers int) *simProcess {
	return &simProcess{fds: newFDTable(workers)}
}

// open is what open(2) writes before the walk: a descriptor taken
// (get_unused_fd_flags) and the file's reference on the cred
// (alloc_empty_file). It returns the descriptor, -1 if none.
func (p *simProcess) open() int {
	if p == nil {
		return -1
	}
	fd := p.fds.alloc()
	p.cred.Add(1)
	return fd
}

// opened is fd_install, once the walk and the open succeeded.
func (p *simProcess) opened(fd int) {
	if p != nil {
		p.fds.install(fd)
	}
}

// close is close(2), or a failed open's clean-up: the file freed (its
// cred reference dropped) and fd given back.
func (p *simProcess) close(fd int) {
	if p != nil {
		p.cred.Add(-1)
		p.fds.close(fd)
	}
}

// fdTable is the descriptor table the sim's workers share. open(2) takes
// the lowest free descriptor under the table's lock before it walks
// (get_unused_fd_flags), and installs the file in the descriptor's slot
// once opened (fd_install); close(2) clears the slot and frees the
// descriptor under the lock (file_close_fd), and an open that fails gives
// its descriptor back the same way (put_unused_fd). Every worker writes the
// lock's line, the bitmap's and, since lowest-first allocation hands
// workers running at once neighbouring descriptors, the slots' line. A nil
// *fdTable makes none of these writes.
type fdTable struct {
	mu    sync.Mutex // protects next and inUse; the kernel's files_struct.file_lock
	next  int        // under mu: no descriptor below it is free (next_fd)
	inUse []uint64   // under mu: the open-descriptor bitmap, fixed size
	_     [cacheLine]byte
	slots []atomic.Pointer[fdFile] // immutable slice; a slot is stored at install and close
}

// fdFile stands for the struct file a slot holds.
type fdFile struct{}

var theFile fdFile

// cacheLine keeps the table's lock and bitmap off its slots' line, and
// the cred's count off both.
const cacheLine = 128

// newFDTable returns a table of n descriptors; a worker holds one at a
// time, so n is the number of workers (a full table hands out -1 and the
// operation goes on without one).
func newFDTable(n int) *fdTable {
	n = max(n, 64)
	return &fdTable{inUse: make([]uint64, (n+63)/64), slots: make([]atomic.Pointer[fdFile], n)}
}

// alloc takes the lowest free descriptor, or -1 if there is none.
func (t *fdTable) alloc() int {
	if t == nil {
		return -1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for w := t.next / 64; w < len(t.inUse); w++ {
		if free := ^t.inUse[w]; free != 0 {
			fd := w*64 + bits.TrailingZeros64(free)
			t.inUse[w] |= 1 << (fd % 64)
			t.next = fd + 1
			return fd
		}
	}
	return -1
}

// install puts the open file in fd's slot.
func (t *fdTable) install(fd int) {
	if t != nil && fd >= 0 {
		t.slots[fd].Store(&theFile)
	}
}

// close empties fd's slot and frees fd, or frees an fd never installed.
func (t *fdTable) close(fd int) {
	if t == nil || fd < 0 {
		return
	}
	t.mu.Lock()
	t.slots[fd].Store(nil)
	t.inUse[fd/64] &^= 1 << (fd % 64)
	t.next = min(t.next, fd)
	t.mu.Unlock()
}
