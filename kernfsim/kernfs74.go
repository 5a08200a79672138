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
// one emitted by its full key (hash, ino), and fn runs with no lock
// held. An entry added or removed between two steps is seen or not, as
// with kernfs_fop_readdir; no entry present throughout is skipped or
// repeated. A directory removed in the middle ends the listing.
func (t *Tree) readdirPerEntry(dir *Node, off uint64, fn func(Dirent) bool) error {
	var last entry
	started := false
	for {
		r := t.rlock()
		active := dir.IsActive()
		var e entry
		var name string
		found := false
		if active {
			e, name, found = nextEntry(dir, dir.dir().children.Load(), off, last, started)
		}
		t.runlock(r)
		switch {
		case !active && !started:
			return &fs.PathError{Op: "readdir", Path: dir.Path(), Err: syscall.ENOENT}
		case !found:
			return nil
		}
		started, last = true, e
		if !fn(Dirent{Name: name, Ino: e.node.ino, Kind: e.node.kind, Off: e.hash}) {
			return nil
		}
	}
}

// nextEntry is dir's first active child in x, with its name, whose key
// is above last's if started, else whose hash is above off.
func nextEntry(dir *Node, x *index, off uint64, last entry, started bool) (next entry, name string, found bool) {
	after := off
	if started {
		after = last.hash - 1 // hashes are at least FirstOffset: no wrap
	}
	x.each(after, func(e entry) bool {
		if started && !last.less(e) {
			return true
		}
		id, ok := e.current(dir)
		if !ok || !e.node.IsActive() {
			return true
		}
		next, name, found = e, id.name, true
		return false
	})
	return next, name, found
}
