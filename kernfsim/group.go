package kernfsim

import (
	"context"
	"io/fs"
	"slices"
	"syscall"
)

// Placement is one node of an AddGroup: Spec added as Name in Parent. A
// directory may come with Children, linked into it before it is published.
type Placement struct {
	Parent   *Node
	Name     string
	Spec     NodeSpec
	Children []BatchEntry
	// MaxSubdirs, if > 0, fails the group with ENOSPC when Parent already
	// has that many subdirectories (a cap checked under the same write-side
	// acquisition that adds, so it holds against racing writers).
	MaxSubdirs int
}

// AddGroup adds every placement, each with its children, under one
// write-side acquisition: all of them or, on any error (a bad name or spec,
// a name taken, a parent removed, a cap reached), none. Readers see the
// whole group appear at once, never part of it; a device's directory and
// its class symlink are one group.
func (t *Tree) AddGroup(ps []Placement) ([]*Node, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	nodes := make([]*Node, len(ps))
	for i := range ps {
		n, err := t.buildPlacement(ps, i)
		if err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	if err := t.strategy.Lock(); err != nil {
		return nil, &fs.PathError{Op: "add", Path: joinPath(ps[0].Parent, ps[0].Name), Err: err}
	}
	bad, e := t.checkGroupLocked(ps)
	if e == 0 {
		for i, p := range ps {
			t.linkLocked(p.Parent, p.Name, nodes[i])
			t.nodes.Add(int64(len(p.Children)))
		}
	}
	t.strategy.Unlock()
	if e != 0 {
		return nil, &fs.PathError{Op: "add", Path: joinPath(ps[bad].Parent, ps[bad].Name), Err: e}
	}
	for i, p := range ps {
		t.notify(Event{Op: OpAdd, Node: nodes[i], Parent: p.Parent, Name: p.Name})
		nodes[i].dirChildren(func(c *Node) {
			t.notify(Event{Op: OpAdd, Node: c, Parent: nodes[i], Name: c.id0.name})
		})
	}
	return nodes, nil
}

// buildPlacement makes ps[i]'s node with its children linked in, private
// to the caller, after checking its names and specs.
func (t *Tree) buildPlacement(ps []Placement, i int) (*Node, error) {
	p := ps[i]
	fail := func(path string, e error) (*Node, error) {
		return nil, &fs.PathError{Op: "add", Path: path, Err: e}
	}
	path := joinPath(p.Parent, p.Name)
	if e := ValidateName(p.Name); e != 0 {
		return fail(path, e)
	}
	if e := checkSpec(p.Spec); e != 0 || (p.Children != nil && p.Spec.Kind != KindDir) {
		return fail(path, syscall.EINVAL)
	}
	for _, q := range ps[:i] {
		if q.Parent == p.Parent && q.Name == p.Name {
			return fail(path, syscall.EEXIST)
		}
	}
	size := sizeOf(p.Spec.Kind)
	for _, en := range p.Children {
		size.add(en.Spec.Kind)
	}
	s := t.newSlab(size)
	n := s.node(p.Spec, t.attrFor(p.Spec), p.Parent, p.Name)
	bad := slices.IndexFunc(p.Children, func(en BatchEntry) bool {
		return ValidateName(en.Name) != 0 || checkSpec(en.Spec) != 0 || en.Spec.Kind == KindDir
	})
	if bad < 0 {
		bad = len(p.Children)
	}
	kids := make([]*Node, bad)
	es := make([]entry, bad)
	for i, en := range p.Children[:bad] {
		kids[i] = s.node(en.Spec, t.attrFor(en.Spec), n, en.Name)
		es[i] = entry{hash: nameHash(en.Name), node: kids[i]}
	}
	es = sortEntries(es)
	if d := firstRepeat(es, kids); d < bad {
		return fail(path+"/"+p.Children[d].Name, syscall.EEXIST)
	}
	if bad < len(p.Children) {
		return fail(path+"/"+p.Children[bad].Name, syscall.EINVAL)
	}
	if d := n.dir(); d != nil {
		d.children.Store(newIndex(es))
	}
	return n, nil
}

// checkGroupLocked returns the index and errno of the first placement that
// cannot be linked now, or 0.
//
// Preconditions: the write side is held.
func (t *Tree) checkGroupLocked(ps []Placement) (int, syscall.Errno) {
	for i, p := range ps {
		switch {
		case p.Parent.kind != KindDir:
			return i, syscall.ENOTDIR
		case !p.Parent.IsActive():
			return i, syscall.ENOENT
		case p.MaxSubdirs > 0 && int(p.Parent.dir().subdirs.Load()) >= p.MaxSubdirs:
			return i, syscall.ENOSPC
		case p.Parent.dir().children.Load().find(p.Parent, nameHash(p.Name), p.Name) != nil:
			return i, syscall.EEXIST
		}
	}
	return 0, 0
}

// dirChildren calls fn for each child of a directory n; nothing for other
// kinds.
func (n *Node) dirChildren(fn func(*Node)) {
	if n.dir() == nil {
		return
	}
	n.dir().children.Load().each(0, func(e entry) bool {
		fn(e.node)
		return true
	})
}

// ChildRef names a child of a directory for RemoveNamed. An Optional child
// that is missing is skipped instead of failing the removal.
type ChildRef struct {
	Parent   *Node
	Name     string
	Optional bool
}

// RemoveNamed is RemoveAll of the children refs name, looked up under the
// same write-side acquisition that deactivates them, so a racing writer
// cannot slip in between: all of them or, if one that is not Optional is
// missing, none, with ENOENT naming it. Each node must be named once.
func (t *Tree) RemoveNamed(ctx context.Context, refs ...ChildRef) error {
	if len(refs) == 0 {
		return nil
	}
	if err := t.strategy.Lock(); err != nil {
		return &fs.PathError{Op: "remove", Path: joinPath(refs[0].Parent, refs[0].Name), Err: err}
	}
	var nodes []*Node
	for _, ref := range refs {
		n, _, e := lookupLocked(ref.Parent, ref.Name, nameHash(ref.Name))
		if e != 0 && !ref.Optional {
			t.strategy.Unlock()
			return &fs.PathError{Op: "remove", Path: joinPath(ref.Parent, ref.Name), Err: e}
		}
		if e == 0 {
			nodes = append(nodes, n)
		}
	}
	r, bad, e := t.unpublishLocked(nodes)
	t.strategy.Unlock()
	if e != 0 {
		return &fs.PathError{Op: "remove", Path: bad.Path(), Err: e}
	}
	t.finishRemoval(ctx, r)
	return nil
}
