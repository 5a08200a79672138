package locking

import (
	"sync"
	"unsafe"
)

// Kernfs64 is kernfs's locking as mainline has it from Linux 6.4: three
// locks where 5.15 had one.
//
//   - The tree rwsem (kernfs_root->kernfs_rwsem; kernfsim has one tree, so
//     one root and one rwsem) is the Strategy's read and write side:
//     lookup, d_revalidate and readdir read under it, and every change of
//     the tree writes under it. kernfs_dop_revalidate still returns
//     -ECHILD under LOOKUP_RCU, so there is no RCU walk (ScopedReads is
//     false) and every call takes the read side.
//   - The attribute rwsem (kernfs_root->kernfs_iattr_rwsem, Imran Khan's
//     commit 9caf69614225, 6.4) is the AttrLocker: kernfs_iop_permission
//     and kernfs_iop_getattr refresh the inode under its read side, not
//     the tree's; kernfs_setattr and kernfs_iop_setattr write under its
//     write side. A permission check and a lookup no longer meet on one
//     lock's line.
//   - The open-file mutexes (kernfs_open_file_mutex_ptr, 6.0) are the
//     OpenFileLocker: 1024 mutexes, the node's one picked by a hash of
//     its key, taken by kernfs_get_open_node on open and by
//     kernfs_unlink_open_file on release. Before 6.0 one global
//     kernfs_open_file_mutex serialised every open and release.
//
// Each rwsem is an RWSem, counted as rwsem's is (readers on their P's
// line); the tree rwsem's counters are Stats' Read and Write fields, the
// attribute rwsem's Stats.Attr, the open-file mutexes' Stats.OpenFile
// (write side, summed over the mutexes; each mutex counts on its own
// line).
//
// Not modelled (unchecked against the kernel's source): 6.4's
// kernfs_add_one and __kernfs_remove also take the attribute rwsem inside
// the tree rwsem to update the parent's times, which kernfsim does not
// keep; kernfs_notify and poll, which kernfsim does not have (since 6.0
// kernfs_notify reads the open node under RCU, rather than take the mutex);
// and the changes after 6.4. A lookup's attributes (a FUSE LOOKUP reply)
// are read under the lookup's tree read side alone, as in
// kernfs_iop_lookup: kernfs_init_inode refreshes a new inode without the
// attribute rwsem.
//
// Reader cost: rwsem's, on the tree rwsem for lookups and revalidations
// and on the attribute rwsem for permission and getattr: two lines that
// readers on different CPUs bounce, where rwsem had one. Writer cost:
// rwsem's, on the tree rwsem for tree changes and on the attribute rwsem
// for setattr. Opening or releasing a file: one mutex of 1024, chosen by
// the node. Allocation: none. Staleness: none.
type Kernfs64 struct {
	tree  RWSem          // kernfs_rwsem: the read and write sides
	attr  *RWSem         // immutable pointer: kernfs_iattr_rwsem
	files *openFileLocks // immutable pointer: kernfs_open_file_mutex[]
}

var (
	_ AttrLocker     = (*Kernfs64)(nil)
	_ OpenFileLocker = (*Kernfs64)(nil)
)

func newKernfs64(o Options) *Kernfs64 {
	k := &Kernfs64{}
	k.init(o)
	return k
}

// init sets a new Kernfs64's locks and counters up as o says.
func (k *Kernfs64) init(o Options) {
	k.attr, k.files = newRWSem(o), new(openFileLocks)
	k.tree.init(o)
	for i := range k.files {
		k.files[i].stats.init(o)
	}
}

func (k *Kernfs64) Name() string        { return "kernfs64" }
func (k *Kernfs64) RLock() ReadToken    { return k.tree.RLock() }
func (k *Kernfs64) RUnlock(t ReadToken) { k.tree.RUnlock(t) }
func (k *Kernfs64) Lock() error         { return k.tree.Lock() }
func (k *Kernfs64) Unlock()             { k.tree.Unlock() }
func (k *Kernfs64) Seal()               {}
func (k *Kernfs64) Grace() *Grace       { return nil }
func (k *Kernfs64) Traits() Traits      { return mustTraits("kernfs64") }

func (k *Kernfs64) AttrRLock() ReadToken    { return k.attr.RLock() }
func (k *Kernfs64) AttrRUnlock(t ReadToken) { k.attr.RUnlock(t) }
func (k *Kernfs64) AttrLock()               { k.attr.Lock() }
func (k *Kernfs64) AttrUnlock()             { k.attr.Unlock() }

func (k *Kernfs64) OpenFileLock(key uint64)   { k.files.of(key).lock() }
func (k *Kernfs64) OpenFileUnlock(key uint64) { k.files.of(key).unlock() }

// Stats reports the tree rwsem's counters, and the attribute rwsem's and
// the open-file mutexes' in Attr and OpenFile.
func (k *Kernfs64) Stats() Stats {
	s := k.tree.Stats()
	if !s.CountersSwitchedOn {
		return s
	}
	s.Attr = k.attr.Stats().LockCounts
	for i := range k.files {
		s.OpenFile = s.OpenFile.add(k.files[i].stats.snapshot().LockCounts)
	}
	return s
}

// openFileLockBits is the log2 of the number of open-file mutexes:
// NR_KERNFS_LOCK_BITS is 2 * ilog2(min(NR_CPUS, 32)), so 1024 mutexes on
// any kernel built for 32 CPUs or more (distributions build for
// thousands).
const openFileLockBits = 10

// openFileLock is one open-file mutex and its counters, alone on its
// cache line.
type openFileLock struct {
	mu    sync.Mutex
	stats lockStats // writeStart protected by mu
	_     [cacheLine - (unsafe.Sizeof(sync.Mutex{})+unsafe.Sizeof(lockStats{}))%cacheLine]byte
}

// openFileLocks are the hashed mutexes. At 128 KiB the array is a large
// allocation, page-aligned, so each mutex keeps its line.
type openFileLocks [1 << openFileLockBits]openFileLock

const _ = uint(unsafe.Sizeof(openFileLock{}) - cacheLine)
const _ = uint(cacheLine - unsafe.Sizeof(openFileLock{}))

// of is the mutex of key. kernfs hashes the node's address (hash_ptr);
// kernfsim's keys are inode numbers, unique for the tree's life, and the
// same multiplicative hash spreads consecutive ones over the mutexes.
func (l *openFileLocks) of(key uint64) *openFileLock {
	return &l[key*fibonacci>>(64-openFileLockBits)]
}

func (m *openFileLock) lock()   { m.stats.writeLock(m.mu.TryLock, m.mu.Lock) }
func (m *openFileLock) unlock() { m.stats.writeUnlock(m.mu.Unlock) }
