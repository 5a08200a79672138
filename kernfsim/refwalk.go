package kernfsim

import (
	"sync"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/locking"
)

// The kernel's ref-walk, as shared writes outside kernfs's lock.
//
// A walk through sysfs leaves rcu-walk at sysfs's root, and ref-walk
// then writes lines that every CPU walking the same prefix shares: each
// dentry's reference count, and each inode's attributes, refreshed under
// kernfs_iattr_rwsem. A walker with WalkerOptions.RefWalk makes these
// writes; the bare walker shares nothing but kernfs's own lock. The
// writes change no state a walk reads. Why the kernel makes them, and
// what the calibrated sim gains: docs/design.md ("The walker's
// ref-walk").

// refWalk holds a walker's ref-walk state; its zero value (off) does
// nothing, and each of its methods is a test of on that inlines.
type refWalk struct {
	on    bool               // immutable
	iattr *sync.RWMutex      // immutable pointer: kernfs_iattr_rwsem's stand-in, where the strategy has none
	attrs locking.AttrLocker // immutable: the strategy's attribute lock (kernfs_iattr_rwsem itself, kernfs64), taken instead; or nil
	mount []refLines         // immutable slice: the dentries above the tree's root
}

// refLines are what ref-walk writes for one dentry: its reference count
// (d_lockref) and its inode's attributes, each on a line of its own.
type refLines struct {
	_     [cacheLine]byte
	refs  atomic.Int64 // accessed atomically
	_     [cacheLine - 8]byte
	mode  atomic.Uint32 // accessed atomically: the inode's i_mode
	nlink atomic.Uint32 // accessed atomically: the inode's i_nlink
	_     [cacheLine - 8]byte
}

// cacheLine is the padding unit that keeps a modelled line off its
// neighbours (adjacent-line prefetch on x86 pairs 64-byte lines).
const cacheLine = 128

// newRefWalk is a walker's ref-walk state: off, or on with mountDepth
// dentries above the root, refreshing inodes under attrs if the strategy
// has an attribute lock, else under a lock of the walker's own.
func newRefWalk(on bool, mountDepth int, attrs locking.AttrLocker) refWalk {
	switch {
	case !on:
		return refWalk{}
	case attrs != nil:
		return refWalk{on: true, attrs: attrs, mount: make([]refLines, mountDepth)}
	}
	return refWalk{on: true, iattr: new(sync.RWMutex), mount: make([]refLines, mountDepth)}
}

// newLines is a new dentry's lines, or nil when the walk is not modelled.
func (r *refWalk) newLines() *refLines {
	if !r.on {
		return nil
	}
	return new(refLines)
}

// enter takes references on the dentries above the root and on the root,
// as a walk from "/" that leaves rcu-walk at the root holds them.
func (r *refWalk) enter(root *dentry) {
	if r.on {
		for i := range r.mount {
			r.mount[i].refs.Add(1)
		}
		root.lines.refs.Add(1)
	}
}

// leave drops what enter took above the root.
func (r *refWalk) leave() {
	if r.on {
		for i := range r.mount {
			r.mount[i].refs.Add(-1)
		}
	}
}

// get and put are d_lockref's reference on d.
func (r *refWalk) get(d *dentry) {
	if r.on {
		d.lines.refs.Add(1)
	}
}

func (r *refWalk) put(d *dentry) {
	if r.on {
		d.lines.refs.Add(-1)
	}
}

// refresh is kernfs_iop_permission's (and kernfs_iop_getattr's) refresh
// of d's inode. d is positive.
func (r *refWalk) refresh(d *dentry) {
	if r.on {
		r.refreshInode(d)
	}
}

func (r *refWalk) refreshInode(d *dentry) {
	if r.attrs != nil {
		t := r.attrs.AttrRLock()
		storeInode(d)
		r.attrs.AttrRUnlock(t)
		return
	}
	r.iattr.RLock()
	storeInode(d)
	r.iattr.RUnlock()
}

// refreshLocked is refresh for a caller that holds the attribute lock
// already (kernfs_iop_permission under kernfs64).
func (r *refWalk) refreshLocked(d *dentry) {
	if r.on {
		storeInode(d)
	}
}

// storeInode writes what kernfs_refresh_inode writes: d's mode and nlink.
func storeInode(d *dentry) {
	nlink := uint32(1)
	if d.node.kind == KindDir {
		nlink = 2 + uint32(d.node.dir().subdirs.Load())
	}
	d.lines.mode.Store(uint32(d.node.attr.Load().Mode))
	d.lines.nlink.Store(nlink)
}
