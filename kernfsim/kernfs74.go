package kernfsim

import (
	"io/fs"
	"sync/atomic"
	"syscall"

	"github.com/kernfsim/kernfsim/internal/pshard"
)

// This file holds what the tree does differently under a strategy with
// Traits.LocklessRevalidate or Traits.ReaddirPerEntry (kernfs74), and
// the revalidation counter every strategy keeps.

// revalShards is the number of revalidation counter shards: a power of
// two, one per P up to 64 Ps.
const revalShards = 64

// revalCounter counts revalidations, each P on its own cache line, so
// that counting shares no line between CPUs.
type revalCounter [revalShards]struct {
	n atomic.Int64
	_ [120]byte
}

// add counts one revalidation on the calling P's line.
func (c *revalCounter) add() { c[pshard.Of(revalShards-1)].n.Add(1) }

// sum is the revalidations counted so far.
func (c *revalCounter) sum() int64 {
	var s int64
	for i := range c {
		s += c[i].n.Load()
	}
	return s
}

// Revalidations is how many cached lookups the tree has revalidated
// (Revalidate and the walkers' revalidations), under every strategy.
// Under a strategy with Traits.LocklessRevalidate none of them entered
// the read side; under the others each entered it once
// (TestRevalidateTakesNoTreeLock).
func (t *Tree) Revalidations() int64 { return t.revals.sum() }

// revalidate is kernfs_dop_revalidate as the strategy has it: without
// any lock under Traits.LocklessRevalidate, else under the read side
// entered through rs (EnterCall: nothing inside an rcu-walk scope).
func (t *Tree) revalidate(dir *Node, name string, n *Node, rev uint64) bool {
	t.revals.add()
	if t.lockless {
		// Every field revalidateLocked reads (dir's revision and
		// liveness, n's active count and identity) is an atomic
		// that writers publish whole under the write side: the loads
		// need no lock, as kernfs74 reads them with READ_ONCE and
		// under RCU.
		return revalidateLocked(dir, name, n, rev)
	}
	r := t.reads.EnterCall()
	ok := revalidateLocked(dir, name, n, rev)
	t.reads.ExitCall(r)
	return ok
}

// readdirPerEntry is Readdir under Traits.ReaddirPerEntry: the read side
// is entered once per entry, around finding the entry after the last
// one emitted by its full key (hash, name), and fn runs with no lock
// held. An entry added or removed between two steps is seen or not, as
// with kernfs_fop_readdir; no entry present throughout is skipped or
// repeated. A directory removed in the middle ends the listing.
func (t *Tree) readdirPerEntry(dir *Node, off uint64, fn func(Dirent) bool) error {
	var last *child
	for {
		r := t.rlock()
		active := dir.IsActive()
		var c *child
		if active {
			c = nextActive(dir.dir.children.Load(), off, last)
		}
		t.runlock(r)
		switch {
		case !active && last == nil:
			return &fs.PathError{Op: "readdir", Path: dir.Path(), Err: syscall.ENOENT}
		case c == nil:
			return nil
		}
		last = c
		if !fn(Dirent{Name: c.name, Ino: c.node.ino, Kind: c.node.kind, Off: c.hash}) {
			return nil
		}
	}
}

// nextActive is the first active entry of root after last, or, if last
// is nil, the first with a hash above off.
func nextActive(root *child, off uint64, last *child) *child {
	var c *child
	if last == nil {
		c = root.firstAbove(off)
	} else {
		c = root.next(last.hash, last.name)
	}
	for c != nil && !c.node.IsActive() {
		c = root.next(c.hash, c.name)
	}
	return c
}

// next is the entry with the smallest key above (hash, name), or nil.
func (c *child) next(hash uint64, name string) *child {
	var best *child
	for c != nil {
		if c.compare(hash, name) < 0 {
			best, c = c, c.left
		} else {
			c = c.right
		}
	}
	return best
}

// firstAbove is the entry with the smallest key whose hash is above
// hash, or nil.
func (c *child) firstAbove(hash uint64) *child {
	var best *child
	for c != nil {
		if c.hash > hash {
			best, c = c, c.left
		} else {
			c = c.right
		}
	}
	return best
}
