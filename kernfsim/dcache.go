package kernfsim

import (
	"sync"
	"sync/atomic"
)

// dentry is a walker's cached lookup result: node found as name in the
// parent dentry's directory, or (node == nil) name missing from it at the
// directory's revision rev. A dentry is immutable once published except
// for next, which links its hash chain. It is 64 bytes, one cache line's
// worth, as the kernel keeps what rcu-walk reads in a dentry's first line.
type dentry struct {
	id     uint64  // unique per walker; keys the children's hash buckets
	parent *dentry // nil for the root
	name   string
	node   *Node  // nil for a negative entry
	rev    uint64 // negative entries: the parent directory's revision

	next atomic.Pointer[dentry] // changed under the bucket's mu; read without a lock

	lines *refLines // immutable: ref-walk's writes (WalkerOptions.RefWalk), off this line; nil without
}

// dcacheBucket is one hash chain, alone on its cache line for readers.
type dcacheBucket struct {
	head atomic.Pointer[dentry] // replaced under mu
	mu   sync.Mutex
	_    [64 - 16]byte
}

// dcache maps (parent dentry, name) to a dentry, like the kernel's dentry
// hash table: readers walk a chain without a lock; inserts and removals
// lock one bucket. An unlinked dentry keeps its next pointer, so a reader
// standing on it still reaches the rest of the chain (hlist_bl_del_rcu).
type dcache struct {
	buckets []dcacheBucket // immutable slice, fixed size, a power of two; read by every lookup
	mask    uint64         // immutable
	_       [64]byte       // keeps the inserts' counters off the line every lookup reads
	nextID  atomic.Uint64  // accessed atomically, by inserts only
	size    atomic.Int64   // accessed atomically: entries cached
}

func newDcache(buckets int) *dcache {
	n := 1
	for n < buckets {
		n <<= 1
	}
	return &dcache{buckets: make([]dcacheBucket, n), mask: uint64(n - 1)}
}

func (c *dcache) bucket(parent *dentry, hash uint64) *dcacheBucket {
	h := hash ^ parent.id*0x9e3779b97f4a7c15
	return &c.buckets[(h^h>>32)&c.mask]
}

// get returns the cached entry for name (whose nameHash is hash) under
// parent, or nil.
func (c *dcache) get(parent *dentry, name string, hash uint64) *dentry {
	for d := c.bucket(parent, hash).head.Load(); d != nil; d = d.next.Load() {
		if d.parent == parent && d.name == name {
			return d
		}
	}
	return nil
}

// put caches d (parent, name, node, rev set; hash is nameHash(d.name)),
// replacing any entry for the same name, and returns it.
func (c *dcache) put(d *dentry, hash uint64) *dentry {
	d.id = c.nextID.Add(1)
	b := c.bucket(d.parent, hash)
	b.mu.Lock()
	if old := c.get(d.parent, d.name, hash); old != nil {
		b.unlinkLocked(old)
	} else {
		c.size.Add(1)
	}
	d.next.Store(b.head.Load())
	b.head.Store(d)
	b.mu.Unlock()
	return d
}

// drop forgets stale (whose name's nameHash is hash) if it is still cached.
func (c *dcache) drop(stale *dentry, hash uint64) {
	b := c.bucket(stale.parent, hash)
	b.mu.Lock()
	if c.get(stale.parent, stale.name, hash) == stale {
		b.unlinkLocked(stale)
		c.size.Add(-1)
	}
	b.mu.Unlock()
}

// unlinkLocked takes d out of the chain; d keeps its next pointer.
//
// Preconditions: b.mu is held and d is in b's chain.
func (b *dcacheBucket) unlinkLocked(d *dentry) {
	if b.head.Load() == d {
		b.head.Store(d.next.Load())
		return
	}
	for p := b.head.Load(); p != nil; p = p.next.Load() {
		if p.next.Load() == d {
			p.next.Store(d.next.Load())
			return
		}
	}
}
