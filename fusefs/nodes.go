package fusefs

import (
	"math"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// dead marks an entry whose lookup count reached zero and that has left
// (or is leaving) the table; a LOOKUP that finds it installs a new entry.
// Any negative count is dead: a LOOKUP adds before it looks, so the adds
// of LOOKUPs that found the entry dead leave it negative.
const dead = math.MinInt64 / 2

// entry is a node the kernel knows by nodeid (its inode number, never
// reused). lookups counts the positive LOOKUP replies not yet forgotten.
type entry struct {
	node    *kernfsim.Node // immutable
	lookups atomic.Int64   // accessed atomically; dead once forgotten
}

// nodeTable is the nodeid table: nodeid -> entry. Resolving a nodeid takes
// no lock (table.Get); under mutex and rwsem the Server wraps it in the
// strategy's read side, as the tree's other readers are. Nodeids are never
// reused, so its table releases chunks once emptied (set by New).
type nodeTable struct {
	t table[entry]
}

// get returns the node for nodeid, or nil if the kernel cannot know it.
func (nt *nodeTable) get(nodeid uint64) *kernfsim.Node {
	if e := nt.t.Get(nodeid); e != nil {
		return e.node
	}
	return nil
}

// ref records one more positive LOOKUP reply for n (the kernel will send a
// FORGET for it). It races safely with forget: an entry whose count went
// to zero is dead and replaced, never revived. A live entry takes one
// atomic add, which, unlike a compare-and-swap, never fails and retries
// when LOOKUPs on other CPUs count the same node (TestNodeTableRefForget).
func (nt *nodeTable) ref(n *kernfsim.Node) {
	id := n.Ino()
	for {
		e := nt.t.Get(id)
		if e != nil && e.lookups.Add(1) > 0 {
			return
		}
		fresh := &entry{node: n}
		fresh.lookups.Store(1)
		if nt.t.CompareAndSwap(id, e, fresh) {
			return
		}
	}
}

// forget drops n lookups of nodeid; at zero the entry leaves the table.
func (nt *nodeTable) forget(nodeid, n uint64) {
	e := nt.t.Get(nodeid)
	if e == nil {
		return
	}
	for {
		v := e.lookups.Load()
		if v < 0 {
			return // dead
		}
		next := v - int64(n)
		if next <= 0 {
			if e.lookups.CompareAndSwap(v, dead) {
				nt.t.CompareAndSwap(nodeid, e, nil)
				return
			}
			continue
		}
		if e.lookups.CompareAndSwap(v, next) {
			return
		}
	}
}

// pin keeps nodeid resolvable forever (the root: the kernel never forgets
// it).
func (nt *nodeTable) pin(n *kernfsim.Node) {
	e := &entry{node: n}
	e.lookups.Store(1 << 62)
	nt.t.CompareAndSwap(n.Ino(), nil, e)
}

// len is the table's size.
func (nt *nodeTable) len() int64 { return nt.t.Len() }
