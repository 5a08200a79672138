package kernfsim

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"
)

// GPPolicy is how a strategy with grace periods (rcu, percpu) orders
// teardown after one.
type GPPolicy string

const (
	// GPNormal waits a normal grace period (Synchronize) before the
	// teardown completes and Remove returns.
	GPNormal GPPolicy = "normal"
	// GPExpedited forces one (SynchronizeExpedited).
	GPExpedited GPPolicy = "expedited"
	// GPDeferred unpublishes and returns; the teardown runs from a grace
	// period callback (Call). Barrier waits for every queued teardown.
	GPDeferred GPPolicy = "deferred"
)

// GPPolicies lists the policies in the order of their cost to the caller.
var GPPolicies = []GPPolicy{GPNormal, GPExpedited, GPDeferred}

// ParseGPPolicy returns the policy called s.
func ParseGPPolicy(s string) (GPPolicy, error) {
	for _, p := range GPPolicies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown grace-period policy %q: valid policies are normal, expedited, deferred", s)
}

// TeardownStats count removed nodes whose teardown (drain, release,
// subscribers told) was queued by the deferred policy and completed by any
// policy.
type TeardownStats struct {
	Queued, Completed uint64
	// Draining is the number of removed nodes whose teardown is waiting
	// for in-flight users now.
	Draining int64
}

// Teardowns returns the teardown counters.
func (t *Tree) Teardowns() TeardownStats {
	return TeardownStats{Queued: t.tdQueued.Load(), Completed: t.tdDone.Load(), Draining: t.draining.Load()}
}

// Barrier returns when every teardown queued before it has completed
// (under rcu with the deferred policy; otherwise at once).
func (t *Tree) Barrier() {
	if g := t.strategy.Grace(); g != nil {
		g.Barrier()
	}
}

// Remove removes n and everything below it (kernfs_remove): deactivate the
// subtree so new opens fail with ENODEV and lookups find nothing, drain
// in-flight users without holding the tree lock, unlink, bump the parent's
// revision, then tell subscribers. Under a strategy that does not drain
// before unlink (rcu, none) the unlink happens with the deactivation, and
// the rest (the teardown) is ordered after a grace period by the tree's
// GPPolicy if the strategy has grace periods. Remove returns after the teardown, except under
// the deferred policy. A store handler may remove its own node: pass it
// the ctx its Store was given, and its own active reference is given up
// first (kernfs_remove_self).
func (t *Tree) Remove(ctx context.Context, n *Node) error {
	return t.RemoveAll(ctx, n)
}

// RemoveAll is Remove for several nodes that share one grace period (like
// kern_unmount_array): all of them or, if one is the root or already
// removed, none.
func (t *Tree) RemoveAll(ctx context.Context, nodes ...*Node) error {
	if len(nodes) == 0 {
		return nil
	}
	if err := t.strategy.Lock(); err != nil {
		return &fs.PathError{Op: "remove", Path: nodes[0].Path(), Err: err}
	}
	r, bad, e := t.unpublishLocked(nodes)
	t.strategy.Unlock()
	if e != 0 {
		return &fs.PathError{Op: "remove", Path: bad.Path(), Err: e}
	}
	t.finishRemoval(ctx, r)
	return nil
}

// finishRemoval is the part of a removal after the write side is
// released: give up the caller's own active references, then tear down
// after a grace period as the policy says.
func (t *Tree) finishRemoval(ctx context.Context, r *removal) {
	for _, n := range r.tops {
		breakActiveProtection(ctx, t, n)
	}
	g := t.strategy.Grace()
	switch {
	case g == nil:
	case t.gp == GPDeferred:
		t.tdQueued.Add(uint64(len(r.tops)))
		g.Call(func() { t.teardown(r) })
		return
	case t.gp == GPExpedited:
		g.SynchronizeExpedited()
	default:
		g.Synchronize()
	}
	t.teardown(r)
}

// removal is what one RemoveAll took out of the tree.
type removal struct {
	tops        []*Node     // the nodes asked for
	ids         []*identity // where each top was
	all         []*Node     // every deactivated node, tops included
	unlinkLater bool        // the teardown unlinks the tops (Traits.DrainBeforeUnlink: drain first, as kernfs)
}

// unpublishLocked deactivates the tops and their subtrees; unless the
// strategy drains before unlink, it also unlinks the tops, so no new
// reader can reach them. It returns the
// first bad node and its errno if any top cannot be removed, having
// changed nothing.
//
// Preconditions: the write side is held.
func (t *Tree) unpublishLocked(tops []*Node) (*removal, *Node, syscall.Errno) {
	for _, n := range tops {
		switch {
		case n == t.root:
			return nil, n, syscall.EBUSY
		case !n.IsActive():
			return nil, n, syscall.ENOENT
		}
	}
	r := &removal{tops: tops, unlinkLater: t.strategy.Traits().DrainBeforeUnlink}
	for _, n := range tops {
		r.ids = append(r.ids, n.ident.Load())
		if deactivateLocked(n) {
			r.all = append(r.all, n)
		}
		r.all = deactivateSubtreeLocked(n, r.all)
	}
	if !r.unlinkLater {
		t.unlinkAllLocked(r)
	}
	return r, nil, 0
}

// unlinkAllLocked unlinks the tops and uncounts every removed node.
//
// Preconditions: the write side is held.
func (t *Tree) unlinkAllLocked(r *removal) {
	for i, n := range r.tops {
		t.unlinkLocked(n, r.ids[i])
	}
	t.nodes.Add(-int64(len(r.all) - len(r.tops)))
}

// teardown drains every removed node without any tree lock, unlinks the
// tops if they are still linked, and tells subscribers.
func (t *Tree) teardown(r *removal) {
	for _, n := range r.all {
		t.drain(n)
	}
	if r.unlinkLater {
		t.lockWriter()
		t.unlinkAllLocked(r)
		t.strategy.Unlock()
	}
	for i, n := range r.tops {
		t.notify(Event{Op: OpRemove, Node: n, Parent: r.ids[i].parent, Name: r.ids[i].name})
	}
	t.tdDone.Add(uint64(len(r.tops)))
}

// lockWriter takes the write side for the second half of a removal whose
// first half took it. Only a strategy that drains before unlink gets here,
// and New refuses one that may also refuse writers.
func (t *Tree) lockWriter() {
	if err := t.strategy.Lock(); err != nil {
		panic(fmt.Sprintf("kernfsim: write side refused in the middle of a removal: %v", err)) // broken invariant
	}
}

// deactivateSubtreeLocked deactivates every node below dir and returns them
// appended to acc.
//
// Preconditions: the write side is held.
func deactivateSubtreeLocked(dir *Node, acc []*Node) []*Node {
	if dir.dir() == nil {
		return acc
	}
	dir.dir().children.Load().each(0, func(e entry) bool {
		if deactivateLocked(e.node) {
			acc = append(acc, e.node)
		}
		acc = deactivateSubtreeLocked(e.node, acc)
		return true
	})
	return acc
}
