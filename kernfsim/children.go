package kernfsim

import (
	"cmp"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
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

// entry is one child of a directory: its name's hash and its node. It holds
// no name: the name is the node's (identity), and an entry is its node's
// while the node's current identity has this directory as parent and a
// name of this hash (a rename links the new entry, publishes the new
// identity, then unlinks the old entry, so a reader never finds the node
// under neither name). Entries are ordered by (hash, ino), a key that
// never changes.
type entry struct {
	hash uint64
	node *Node
}

// less orders entries by (hash, ino).
func (e entry) less(o entry) bool {
	return e.hash < o.hash || e.hash == o.hash && e.node.ino < o.node.ino
}

// cmpKey orders a against b by (hash, ino): -1, 0 or 1. Only entries of
// one hash, which are rare, look at their nodes.
func cmpKey(a, b entry) int {
	if a.hash != b.hash {
		if a.hash < b.hash {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.node.ino, b.node.ino)
}

// sortEntries sorts es, whose inode numbers rise with their position (a
// batch's, as its slab gives them), by (hash, ino): by hash alone, keeping
// the order of equal hashes. A small batch (most directories) is sorted by
// insertion; a big one by its hashes' top bits first (they are uniform),
// which leaves few entries out of place for the insertion sort after.
func sortEntries(es []entry) []entry {
	if len(es) > smallSort {
		es = bucketSort(es)
	}
	insertionSort(es)
	return es
}

// smallSort is the most entries sortEntries sorts by insertion alone.
const smallSort = 48

// insertionSort sorts es by hash, stably.
func insertionSort(es []entry) {
	for i := 1; i < len(es); i++ {
		e := es[i]
		j := i
		for ; j > 0 && es[j-1].hash > e.hash; j-- {
			es[j] = es[j-1]
		}
		es[j] = e
	}
}

// current reports whether e is its node's entry in dir now, and the
// node's identity. A node never renamed has one entry, so only a renamed
// one's name is hashed.
func (e entry) current(dir *Node) (*identity, bool) {
	id := e.node.ident.Load()
	return id, id.parent == dir && (id == &e.node.id0 || nameHash(id.name) == e.hash)
}

// named reports whether e is dir's entry for name.
func (e entry) named(dir *Node, name string) bool {
	id := e.node.ident.Load()
	return id.parent == dir && id.name == name
}

// smallDir is the most children a directory keeps in a sorted slice (16
// bytes a child, copied whole on a change, as kernfs's small directories
// cost little); a bigger one keeps a treap (32 bytes a child, O(log n) a
// change). A directory that grows past it stays a treap.
const smallDir = 32

// index is a directory's children, immutable once published: a slice
// sorted by (hash, ino) while small, else a persistent treap in the same
// order. A nil *index is an empty directory.
type index struct {
	small []entry
	big   *child
}

// newIndex makes an index of es (sorted, each key once), using es itself.
func newIndex(es []entry) *index {
	if len(es) == 0 {
		return nil
	}
	if len(es) <= smallDir {
		return &index{small: es}
	}
	return &index{big: buildTreap(es)}
}

// find returns dir's child named name (whose nameHash is hash), active or
// not, or nil. It allocates nothing.
func (x *index) find(dir *Node, hash uint64, name string) *Node {
	switch {
	case x == nil:
		return nil
	case x.big != nil:
		return x.big.find(dir, hash, name)
	}
	s := x.small
	for i := firstAtLeast(s, hash); i < len(s) && s[i].hash == hash; i++ {
		if s[i].named(dir, name) {
			return s[i].node
		}
	}
	return nil
}

// firstAtLeast is the position of the first entry of s with a hash of at
// least hash (len(s) if none): a binary search without calls, as every
// lookup in a small directory makes one.
func firstAtLeast(s []entry, hash uint64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].hash < hash {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// each calls fn for the entries with hash > after, in (hash, ino) order,
// until fn returns false. It reports whether it reached the end.
func (x *index) each(after uint64, fn func(entry) bool) bool {
	switch {
	case x == nil:
		return true
	case x.big != nil:
		return x.big.each(after, fn)
	}
	if after == math.MaxUint64 {
		return true
	}
	for _, e := range x.small[firstAtLeast(x.small, after+1):] {
		if !fn(e) {
			return false
		}
	}
	return true
}

// insert returns an index with e added; e's key must be absent.
func (x *index) insert(e entry) *index {
	switch {
	case x == nil:
		return &index{small: []entry{e}}
	case x.big != nil:
		return &index{big: x.big.insert(&child{entry: e})}
	case len(x.small) < smallDir:
		i, _ := slices.BinarySearchFunc(x.small, e, cmpKey)
		return &index{small: slices.Insert(slices.Clip(x.small), i, e)}
	}
	es := make([]entry, 0, len(x.small)+1)
	es = append(append(es, x.small...), e)
	slices.SortFunc(es, cmpKey)
	return &index{big: buildTreap(es)}
}

// insertAll returns an index with the sorted entries es added (their keys
// absent): es itself where x is empty, one merge where x is small, treap
// inserts where it is big.
func (x *index) insertAll(es []entry) *index {
	switch {
	case x == nil:
		return newIndex(es)
	case x.big != nil:
		big := x.big
		for _, e := range es {
			big = big.insert(&child{entry: e})
		}
		return &index{big: big}
	}
	all := make([]entry, 0, len(x.small)+len(es))
	all = append(append(all, x.small...), es...)
	slices.SortFunc(all, cmpKey)
	return newIndex(all)
}

// remove returns an index without e, which must be present.
func (x *index) remove(e entry) *index {
	if x.big != nil {
		if b := x.big.remove(e); b != nil {
			return &index{big: b}
		}
		return nil
	}
	i, ok := slices.BinarySearchFunc(x.small, e, cmpKey)
	if !ok {
		panic("kernfsim: removing a child that is not linked") // broken invariant
	}
	if len(x.small) == 1 {
		return nil
	}
	return &index{small: slices.Delete(slices.Clone(x.small), i, i+1)}
}

// compare orders the key k against c: -1 below, 1 above.
func (c *child) compare(k entry) int { return cmpKey(k, c.entry) }

// child is one entry of a big directory's persistent treap; priority is
// derived from the hash. A child is immutable once published: writers copy
// the path they change.
type child struct {
	entry
	left, right *child
}

// priority is the treap heap key: a mix of the hash, so no random source
// and no extra field are needed.
func (c *child) priority() uint64 {
	x := c.hash * 0x9e3779b97f4a7c15
	return x ^ x>>29
}

// buildTreap links sorted entries into a treap in O(n), from one
// allocation (a Cartesian tree by priority).
func buildTreap(es []entry) *child {
	cs := make([]child, len(es))
	stack := make([]*child, 0, 64)
	for i := range cs {
		c := &cs[i]
		c.entry = es[i]
		var last *child
		for len(stack) > 0 && stack[len(stack)-1].priority() < c.priority() {
			last, stack = stack[len(stack)-1], stack[:len(stack)-1]
		}
		c.left = last
		if len(stack) > 0 {
			stack[len(stack)-1].right = c
		}
		stack = append(stack, c)
	}
	return stack[0]
}

// find returns dir's child named name in the treap, or nil. Entries of
// one hash may sit on both sides of each other (they are ordered by ino),
// so a hash that matches with another name searches both subtrees.
func (c *child) find(dir *Node, hash uint64, name string) *Node {
	for c != nil {
		switch {
		case hash < c.hash:
			c = c.left
		case hash > c.hash:
			c = c.right
		case c.named(dir, name):
			return c.node
		default:
			if n := c.left.find(dir, hash, name); n != nil {
				return n
			}
			c = c.right
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
		e.left, e.right = c.split(e.entry)
		return e
	}
	if c.compare(e.entry) < 0 {
		cp.left = c.left.insert(e)
	} else {
		cp.right = c.right.insert(e)
	}
	return &cp
}

// split divides c into the entries below and above k, copying only the
// nodes on the split path.
func (c *child) split(k entry) (lo, hi *child) {
	if c == nil {
		return nil, nil
	}
	cp := *c
	if c.compare(k) < 0 {
		lo, cp.left = c.left.split(k)
		return lo, &cp
	}
	cp.right, hi = c.right.split(k)
	return &cp, hi
}

// remove returns a treap without the entry k, which must exist.
func (c *child) remove(k entry) *child {
	if c == nil {
		panic("kernfsim: removing a child that is not linked") // broken invariant
	}
	cp := *c
	switch c.compare(k) {
	case -1:
		cp.left = c.left.remove(k)
	case 1:
		cp.right = c.right.remove(k)
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

// each calls fn for the entries with hash > after, in order, until fn
// returns false. It reports whether it reached the end.
func (c *child) each(after uint64, fn func(entry) bool) bool {
	if c == nil {
		return true
	}
	if c.hash > after {
		if !c.left.each(after, fn) || !fn(c.entry) {
			return false
		}
	}
	return c.right.each(after, fn)
}

// bucketSort returns es stably sorted by the top bits of their hashes,
// about one bucket an entry, in a new slice.
func bucketSort(es []entry) []entry {
	shift := 63 - bits.Len(uint(len(es)))
	counts := make([]int32, 1<<(63-shift)+1)
	for _, e := range es {
		counts[e.hash>>shift+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	out := make([]entry, len(es))
	for _, e := range es {
		b := e.hash >> shift
		out[counts[b]] = e
		counts[b]++
	}
	return out
}
