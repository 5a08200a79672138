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
	children atomic.Pointer[index] // published copy-on-write under the write side; nil when empty
	rev      atomic.Uint64         // bumped under the write side on every change of children
	subdirs  atomic.Int32          // child directories, for nlink; changed under the write side
}

// symlink is the part of a node only symlinks have.
type symlink struct {
	target string // relative as sysfs makes them
}

// Node is a directory, attribute or symlink of a Tree.
//
// A Node is 72 bytes, as a kernfs_node is about 128: what only one kind
// needs hangs off ext, and the identity a node is created with lives in
// the node itself (ident points at id0 until a rename publishes a new
// one). Nodes added together (AddBatch, AddGroup) are allocated together,
// with their directories' and symlinks' parts, as kernfs takes its nodes
// from a slab (see slab; docs/design.md, "Node layout"). sysfs's
// TestNodeCost keeps a built node under 128 bytes of heap in all.
type Node struct {
	ident  atomic.Pointer[identity] // replaced under the write side; &id0 until a rename
	attr   atomic.Pointer[Attr]     // replaced under the write side, or the attribute lock where the strategy has one (Setattr)
	ino    uint64                   // immutable, never reused within a tree
	active atomic.Int32             // active references; < 0 once deactivated
	kind   Kind                     // immutable

	// ext is immutable: an attribute's Source, a directory's *dirData or
	// a symlink's *symlink.
	ext any

	id0 identity // immutable once ident is published: the identity n is created with
}

// Kind reports whether n is a directory, attribute or symlink.
func (n *Node) Kind() Kind { return n.kind }

// Ino is n's inode number, unique in its tree for the tree's life.
func (n *Node) Ino() uint64 { return n.ino }

// Name is n's current name ("" for the root).
func (n *Node) Name() string { return n.ident.Load().name }

// dir is a directory's own part, nil for other kinds.
func (n *Node) dir() *dirData {
	d, _ := n.ext.(*dirData)
	return d
}

// Parent is n's current parent (nil for the root).
func (n *Node) Parent() *Node { return n.ident.Load().parent }

// Target is a symlink's target ("" for other kinds).
func (n *Node) Target() string {
	if l, ok := n.ext.(*symlink); ok {
		return l.target
	}
	return ""
}

// Source is an attribute's contents (nil for other kinds).
func (n *Node) Source() Source {
	s, _ := n.ext.(Source)
	return s
}

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

// slab hands out the nodes of one Add, AddBatch or AddGroup, with their
// directories' and symlinks' parts, from one allocation of each, as kernfs
// takes kernfs_nodes from a kmem_cache: a node costs no allocation of its
// own. A slab's memory lives while any of its nodes is reachable.
type slab struct {
	nodes []Node
	dirs  []dirData
	links []symlink
	ino   uint64 // the next node's inode number
}

// newSlab makes room for c's nodes, and takes their inode numbers, one
// range, from t.
func (t *Tree) newSlab(c slabSize) *slab {
	first := t.nextIno.Add(uint64(c.nodes)) - uint64(c.nodes) + 1
	return &slab{nodes: make([]Node, c.nodes), dirs: make([]dirData, c.dirs), links: make([]symlink, c.links), ino: first}
}

// slabSize counts the nodes of a slab, and its directories and symlinks.
type slabSize struct{ nodes, dirs, links int }

// add counts a node of kind k.
func (c *slabSize) add(k Kind) {
	c.nodes++
	switch k {
	case KindDir:
		c.dirs++
	case KindSymlink:
		c.links++
	}
}

// sizeOf is the size of a slab of one node of kind k.
func sizeOf(k Kind) slabSize {
	var c slabSize
	c.add(k)
	return c
}

// node makes the next node of s: spec named name in parent, with the next
// inode number of s and attributes a. It is not linked anywhere yet.
func (s *slab) node(spec NodeSpec, a *Attr, parent *Node, name string) *Node {
	n := &s.nodes[0]
	s.nodes = s.nodes[1:]
	n.kind, n.ino = spec.Kind, s.ino
	s.ino++
	switch spec.Kind {
	case KindDir:
		n.ext, s.dirs = &s.dirs[0], s.dirs[1:]
	case KindAttr:
		n.ext = spec.Source
	case KindSymlink:
		s.links[0].target = spec.Target
		n.ext, s.links = &s.links[0], s.links[1:]
	}
	n.attr.Store(a)
	n.id0 = identity{parent: parent, name: name}
	n.ident.Store(&n.id0)
	return n
}
