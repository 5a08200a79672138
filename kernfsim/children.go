package kernfsim

import (
	"hash/maphash"
	"math"
)

// FirstOffset is the lowest offset Readdir gives an entry: a listing that
// emits "." and ".." first can give them offsets 1 and 2 and resume with
// Readdir(dir, 2, ...).
const FirstOffset = 3

// nameSeed keys the name hash. Directory offsets are name hashes, so they
// are stable for the life of the process, not across processes.
var nameSeed = maphash.MakeSeed()

// nameHash is a directory offset for name, as kernfs_name_hash: positive,
// never 0, 1 or 2 (reserved for the start of a listing, "." and ".."),
// below MaxInt64.
func nameHash(name string) uint64 {
	h := maphash.String(nameSeed, name) >> 1
	if h < FirstOffset {
		h += FirstOffset
	}
	if h == math.MaxInt64 {
		h--
	}
	return h
}

// child is one entry of a directory's persistent treap, ordered by
// (hash, name); priority is derived from the hash. A child is immutable once
// published: writers copy the path they change.
type child struct {
	hash        uint64
	name        string
	node        *Node
	left, right *child
}

// priority is the treap heap key: a mix of the hash, so no random source
// and no extra field are needed.
func (c *child) priority() uint64 {
	x := c.hash * 0x9e3779b97f4a7c15
	return x ^ x>>29
}

// compare orders (hash, name) against c.
func (c *child) compare(hash uint64, name string) int {
	switch {
	case hash < c.hash:
		return -1
	case hash > c.hash:
		return 1
	case name < c.name:
		return -1
	case name > c.name:
		return 1
	}
	return 0
}

// find returns the entry named name, or nil. It allocates nothing.
func (c *child) find(hash uint64, name string) *child {
	for c != nil {
		switch c.compare(hash, name) {
		case -1:
			c = c.left
		case 1:
			c = c.right
		default:
			return c
		}
	}
	return nil
}

// insert returns a treap with e added; e's key must be absent. The result
// shares every node off the insertion path with c.
func (c *child) insert(e *child) *child {
	if c == nil {
		return e
	}
	cp := *c
	if e.priority() > c.priority() {
		e.left, e.right = c.split(e.hash, e.name)
		return e
	}
	if c.compare(e.hash, e.name) < 0 {
		cp.left = c.left.insert(e)
	} else {
		cp.right = c.right.insert(e)
	}
	return &cp
}

// split divides c into the entries below and above (hash, name), copying
// only the nodes on the split path.
func (c *child) split(hash uint64, name string) (lo, hi *child) {
	if c == nil {
		return nil, nil
	}
	cp := *c
	if c.compare(hash, name) < 0 {
		lo, cp.left = c.left.split(hash, name)
		return lo, &cp
	}
	cp.right, hi = c.right.split(hash, name)
	return &cp, hi
}

// remove returns a treap without the entry (hash, name), which must exist.
func (c *child) remove(hash uint64, name string) *child {
	cp := *c
	switch c.compare(hash, name) {
	case -1:
		cp.left = c.left.remove(hash, name)
	case 1:
		cp.right = c.right.remove(hash, name)
	default:
		return join(c.left, c.right)
	}
	return &cp
}

// join merges two treaps where every key of a is below every key of b.
func join(a, b *child) *child {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.priority() > b.priority():
		cp := *a
		cp.right = join(a.right, b)
		return &cp
	default:
		cp := *b
		cp.left = join(a, b.left)
		return &cp
	}
}

// each calls fn for the entries with hash > after, in hash order, until fn
// returns false. It reports whether it reached the end.
func (c *child) each(after uint64, fn func(*child) bool) bool {
	if c == nil {
		return true
	}
	if c.hash > after {
		if !c.left.each(after, fn) || !fn(c) {
			return false
		}
	}
	return c.right.each(after, fn)
}

// insertMut is insert for a treap no reader can see yet: it links e in
// place instead of copying the path (a batch being built, see AddBatch).
func (c *child) insertMut(e *child) *child {
	if c == nil {
		return e
	}
	if e.priority() > c.priority() {
		e.left, e.right = c.splitMut(e.hash, e.name)
		return e
	}
	if c.compare(e.hash, e.name) < 0 {
		c.left = c.left.insertMut(e)
	} else {
		c.right = c.right.insertMut(e)
	}
	return c
}

// splitMut is split for an unpublished treap, in place.
func (c *child) splitMut(hash uint64, name string) (lo, hi *child) {
	if c == nil {
		return nil, nil
	}
	if c.compare(hash, name) < 0 {
		lo, c.left = c.left.splitMut(hash, name)
		return lo, c
	}
	c.right, hi = c.right.splitMut(hash, name)
	return c, hi
}
