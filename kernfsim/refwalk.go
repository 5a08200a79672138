package kernfsim

import (
	"sync"
	"sync/atomic"
)

// The kernel's ref-walk, as shared writes outside kernfs's lock.
//
// A path walk through sysfs does not stay in rcu-walk: kernfs's
// ->permission() and ->d_revalidate() return -ECHILD under LOOKUP_RCU, so
// every lookup in /sys is retried in ref-walk from the root. Ref-walk
// writes lines that every CPU walking the same prefix shares:
//
//   - a reference taken and dropped on each dentry passed (d_lockref:
//     lockref_get_not_dead and dput), the negative dentry of a missing
//     name included, and the dentries above the mount ("/", "sys");
//   - each directory's inode, refreshed from the kernfs node under
//     kernfs_iattr_rwsem by kernfs_iop_permission (kernfs_refresh_inode:
//     mode, owner, times, set_nlink), a read-side acquisition of an rwsem
//     of its own and stores to the inode's line.
//
// The bare walker (WalkerOptions.RefWalk false) models kernfs's own lock
// only, so two CPUs walking one prefix share nothing but that lock (under
// rcu and none, nothing at all). A walker with RefWalk makes the writes
// above, on lines as the kernel has them: each dentry's reference count on
// the dentry, each inode on a line of its own, one inode-attribute lock
// per walker (kernfs has one per root). This is what the calibrated sim
// (loadgen --sim-cost) adds to its private work: with private work alone
// the sim's missing lookups ran at efficiency 0.87-0.90 on two threads
// where /sys ran at 0.50-0.53, measured alternately on a 2-vCPU VM
// (README, "A calibrated sim").
//
// The writes change no state a walk reads: references count nothing that
// is checked, and a refresh stores what the node already says.

// refWalk holds a walker's ref-walk state; its zero value (off) does
// nothing.
type refWalk struct {
	on    bool          // immutable
	iattr *sync.RWMutex // immutable pointer: kernfs_iattr_rwsem's stand-in
	mount []mountRef    // immutable slice: the dentries above the tree's root
}

// mountRef is a dentry above the tree's root ("/", "sys"), alone on its
// line.
type mountRef struct {
	_    [cacheLine]byte
	refs atomic.Int64 // accessed atomically
	_    [cacheLine - 8]byte
}

// inodeLine is a dentry's inode: the attributes kernfs_refresh_inode
// stores on every permission check, on a line of their own.
type inodeLine struct {
	_     [cacheLine]byte
	mode  atomic.Uint32 // accessed atomically
	nlink atomic.Uint32 // accessed atomically
	_     [cacheLine - 8]byte
}

// cacheLine is the padding unit that keeps a modelled line off its
// neighbours (adjacent-line prefetch on x86 pairs 64-byte lines).
const cacheLine = 128

func newRefWalk(on bool, mountDepth int) refWalk {
	if !on {
		return refWalk{}
	}
	return refWalk{on: true, iattr: new(sync.RWMutex), mount: make([]mountRef, mountDepth)}
}

// newInode is a dentry's inode line, or nil when the walk is not modelled.
func (r *refWalk) newInode() *inodeLine {
	if !r.on {
		return nil
	}
	return new(inodeLine)
}

// enter takes references on the mount's dentries and the root, as a walk
// from "/" passes them.
func (r *refWalk) enter(root *dentry) {
	if !r.on {
		return
	}
	for i := range r.mount {
		r.mount[i].refs.Add(1)
	}
	root.refs.Add(1)
}

// leave drops what enter took above the root.
func (r *refWalk) leave() {
	if !r.on {
		return
	}
	for i := range r.mount {
		r.mount[i].refs.Add(-1)
	}
}

// get and put are d_lockref's reference on d.
func (r *refWalk) get(d *dentry) {
	if r.on {
		d.refs.Add(1)
	}
}

func (r *refWalk) put(d *dentry) {
	if r.on {
		d.refs.Add(-1)
	}
}

// refresh is kernfs_iop_permission's inode refresh of dir's inode. It is
// the test alone, so that it inlines into the bare walk.
func (r *refWalk) refresh(dir *dentry) {
	if r.on && dir.inode != nil {
		r.refreshInode(dir)
	}
}

func (r *refWalk) refreshInode(dir *dentry) {
	r.iattr.RLock()
	a := dir.node.attr.Load()
	dir.inode.mode.Store(uint32(a.Mode))
	dir.inode.nlink.Store(2 + uint32(dir.node.dir.subdirs.Load()))
	r.iattr.RUnlock()
}
