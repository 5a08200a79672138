package kernfsim

import (
	"math"
	"sync/atomic"
)

// Kind is what a node is.
type Kind uint8

const (
	KindDir Kind = iota + 1
	KindAttr
	KindSymlink
)

func (k Kind) String() string {
	switch k {
	case KindDir:
		return "dir"
	case KindAttr:
		return "attr"
	case KindSymlink:
		return "symlink"
	}
	return "unknown"
}

// deactivatedBias is added to a node's active count when it is removed, so
// the count goes negative and new active references fail (kernfs's
// KN_DEACTIVATED_BIAS). The count equals the bias once every in-flight user
// has left.
const deactivatedBias = math.MinInt32 + 1

// identity is where a node hangs: immutable, replaced whole on rename so a
// reader never sees a new parent with an old name.
type identity struct {
	parent *Node // nil for the root
	name   string
}

// dirData is the part of a node only directories have.
type dirData struct {
	children atomic.Pointer[child] // published copy-on-write under the write side
	rev      atomic.Uint64         // bumped under the write side on every change of children
	subdirs  atomic.Int32          // child directories, for nlink; changed under the write side
}

// Node is a directory, attribute or symlink of a Tree.
type Node struct {
	kind   Kind   // immutable
	ino    uint64 // immutable, never reused within a tree
	link   string // immutable: a symlink's target, relative as sysfs makes them
	source Source // immutable: an attribute's contents; nil otherwise

	dir *dirData // immutable pointer; nil unless kind == KindDir

	ident  atomic.Pointer[identity] // replaced under the write side
	attr   atomic.Pointer[Attr]     // replaced under the write side, or the attribute lock where the strategy has one (Setattr)
	active atomic.Int32             // active references; < 0 once deactivated
}

// Kind reports whether n is a directory, attribute or symlink.
func (n *Node) Kind() Kind { return n.kind }

// Ino is n's inode number, unique in its tree for the tree's life.
func (n *Node) Ino() uint64 { return n.ino }

// Name is n's current name ("" for the root).
func (n *Node) Name() string { return n.ident.Load().name }

// Parent is n's current parent (nil for the root).
func (n *Node) Parent() *Node { return n.ident.Load().parent }

// Target is a symlink's target ("" for other kinds).
func (n *Node) Target() string { return n.link }

// Source is an attribute's contents (nil for other kinds).
func (n *Node) Source() Source { return n.source }

// IsActive reports whether n has not been removed.
func (n *Node) IsActive() bool { return n.active.Load() >= 0 }

// Path is n's path from the root, without a leading slash ("" for the root).
// It reads the current identities without a lock, so under concurrent
// renames it may mix old and new names; it is meant for messages.
func (n *Node) Path() string {
	var parts []string
	for id := n.ident.Load(); id.parent != nil; id = id.parent.ident.Load() {
		parts = append(parts, id.name)
	}
	size := len(parts)
	for _, p := range parts {
		size += len(p)
	}
	b := make([]byte, 0, size)
	for i := len(parts) - 1; i >= 0; i-- {
		b = append(b, parts[i]...)
		if i > 0 {
			b = append(b, '/')
		}
	}
	return string(b)
}

// tryGetActive takes an active reference unless n is deactivated
// (kernfs_get_active): lock-free, an increment unless negative.
func (n *Node) tryGetActive() bool {
	for {
		v := n.active.Load()
		if v < 0 {
			return false
		}
		if n.active.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// putActive drops an active reference and wakes drainers when the last
// user of a deactivated node leaves.
func (t *Tree) putActive(n *Node) {
	if n.active.Add(-1) == deactivatedBias {
		t.drainMu.Lock()
		t.drained.Broadcast()
		t.drainMu.Unlock()
	}
}

// deactivateLocked marks n removed: new active references fail from now on.
// It reports false if n was already deactivated.
//
// Preconditions: the tree's write side is held.
func deactivateLocked(n *Node) bool {
	if n.active.Load() < 0 {
		return false
	}
	n.active.Add(deactivatedBias)
	return true
}

// drain waits, without any tree lock, until every active reference taken
// on the deactivated node n has been dropped.
func (t *Tree) drain(n *Node) {
	if n.active.Load() == deactivatedBias {
		return
	}
	t.draining.Add(1)
	defer t.draining.Add(-1)
	t.drainMu.Lock()
	for n.active.Load() != deactivatedBias {
		t.drained.Wait()
	}
	t.drainMu.Unlock()
}
