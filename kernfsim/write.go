package kernfsim

import (
	"cmp"
	"io/fs"
	"math"
	"slices"
	"syscall"
)

// NodeSpec describes a node to add.
type NodeSpec struct {
	Kind   Kind
	Mode   fs.FileMode // permission bits; 0 means 0755 for dirs, 0444 for attributes, 0777 for symlinks
	Uid    uint32
	Gid    uint32
	Source Source // attributes: the contents
	Target string // symlinks: the target
	// Attr, if set, is shared as the node's attributes instead of one made
	// from Mode/Uid/Gid (builders share one per template; it must not be
	// modified afterwards).
	Attr *Attr
}

// MaxNameLen is the longest name a node may have, in bytes (NAME_MAX).
const MaxNameLen = 255

// ValidateName checks a node name the way sysfs callers must: not empty,
// not "." or "..", no '/', no NUL or other control character, at most
// MaxNameLen bytes. It returns EINVAL or ENAMETOOLONG.
func ValidateName(name string) syscall.Errno {
	switch {
	case name == "" || name == "." || name == "..":
		return syscall.EINVAL
	case len(name) > MaxNameLen:
		return syscall.ENAMETOOLONG
	case !plainName(name):
		return syscall.EINVAL
	}
	return 0
}

// plainName reports whether name has no '/' and no control character
// (below 0x20, or DEL). It looks at bytes: every byte of a multi-byte
// UTF-8 sequence is 0x80 or more, so it agrees with a check of runes.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '/' || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func (t *Tree) attrFor(spec NodeSpec) *Attr {
	if spec.Attr != nil {
		return spec.Attr
	}
	mode := spec.Mode
	if mode == 0 {
		mode = map[Kind]fs.FileMode{KindDir: 0o755, KindAttr: 0o444, KindSymlink: 0o777}[spec.Kind]
	}
	now := t.now()
	return &Attr{Mode: mode & fs.ModePerm, Uid: spec.Uid, Gid: spec.Gid, Mtime: now, Ctime: now}
}

// checkSpec says EINVAL for a spec that is not a node: an unknown kind, an
// attribute without a source or another kind with one.
func checkSpec(spec NodeSpec) syscall.Errno {
	if spec.Kind < KindDir || spec.Kind > KindSymlink || (spec.Kind == KindAttr) != (spec.Source != nil) {
		return syscall.EINVAL
	}
	return 0
}

// Add creates name in parent as spec describes (kernfs_add_one). It fails
// with EEXIST if the name is taken, ENOENT if parent was removed.
func (t *Tree) Add(parent *Node, name string, spec NodeSpec) (*Node, error) {
	fail := func(e error) (*Node, error) {
		return nil, &fs.PathError{Op: "add", Path: joinPath(parent, name), Err: e}
	}
	if e := ValidateName(name); e != 0 {
		return fail(e)
	}
	if e := checkSpec(spec); e != 0 {
		return fail(e)
	}
	n := t.newSlab(sizeOf(spec.Kind)).node(spec, t.attrFor(spec), parent, name)
	if err := t.strategy.Lock(); err != nil {
		return fail(err)
	}
	e := t.linkLocked(parent, name, n)
	t.strategy.Unlock()
	if e != 0 {
		return fail(e)
	}
	t.notify(Event{Op: OpAdd, Node: n, Parent: parent, Name: name})
	return n, nil
}

// BatchEntry is one node of an AddBatch.
type BatchEntry struct {
	Name string
	Spec NodeSpec
}

// AddBatch adds entries to parent under one write-side acquisition and one
// revision bump: all of them or, on any error (a bad name, a name taken or
// repeated), none. The new nodes come from one slab, and into an empty
// directory their index is built whole before it is published, so a
// directory of n entries costs O(n log n) small steps and a few
// allocations instead of n path copies; builders use it for every
// directory.
func (t *Tree) AddBatch(parent *Node, entries []BatchEntry) ([]*Node, error) {
	nodes, err := t.AppendBatch(make([]*Node, 0, len(entries)), parent, entries)
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// AppendBatch is AddBatch appending the new nodes, in entries' order, to
// nodes, so that a builder adding many directories reuses one slice. On
// error it returns nodes as given.
func (t *Tree) AppendBatch(nodes []*Node, parent *Node, entries []BatchEntry) ([]*Node, error) {
	start := len(nodes)
	fail := func(name string, e error) ([]*Node, error) {
		return nodes[:start], &fs.PathError{Op: "add", Path: joinPath(parent, name), Err: e}
	}
	bad, badErr := firstInvalid(entries)
	ok := entries[:bad]
	var size slabSize
	for _, en := range ok {
		size.add(en.Spec.Kind)
	}
	s := t.newSlab(size)
	es := make([]entry, len(ok))
	for i, en := range ok {
		n := s.node(en.Spec, t.attrFor(en.Spec), parent, en.Name)
		nodes = append(nodes, n)
		es[i] = entry{hash: nameHash(en.Name), node: n}
	}
	es = sortEntries(es)
	if d := firstRepeat(es, nodes[start:]); d < bad {
		return fail(entries[d].Name, syscall.EEXIST)
	}
	if badErr != 0 {
		return fail(entries[bad].Name, badErr)
	}
	if err := t.strategy.Lock(); err != nil {
		return fail("", err)
	}
	name, e := t.linkBatchLocked(parent, es)
	t.strategy.Unlock()
	if e != 0 {
		return fail(name, e)
	}
	for i, n := range nodes[start:] {
		t.notify(Event{Op: OpAdd, Node: n, Parent: parent, Name: entries[i].Name})
	}
	return nodes, nil
}

// firstInvalid is the position and errno of the first entry with a bad
// name or spec, or len(entries) and 0.
func firstInvalid(entries []BatchEntry) (int, syscall.Errno) {
	for i, en := range entries {
		if e := ValidateName(en.Name); e != 0 {
			return i, e
		}
		if e := checkSpec(en.Spec); e != 0 {
			return i, e
		}
	}
	return len(entries), 0
}

// firstRepeat is the position in nodes (the batch, in order) of the first
// node whose name an earlier one has, or MaxInt; es are their entries,
// sorted by key. A batch's inode numbers rise with its order.
func firstRepeat(es []entry, nodes []*Node) int {
	d := math.MaxInt
	for i := 1; i < len(es); i++ {
		for j := i - 1; j >= 0 && es[j].hash == es[i].hash; j-- {
			if es[j].node.id0.name == es[i].node.id0.name {
				later := max(es[i].node.ino, es[j].node.ino)
				k, _ := slices.BinarySearchFunc(nodes, later, func(n *Node, ino uint64) int { return cmp.Compare(n.ino, ino) })
				d = min(d, k)
			}
		}
	}
	return d
}

// linkBatchLocked publishes the sorted entries es into parent, or reports
// the first name that is taken.
//
// Preconditions: the write side is held.
func (t *Tree) linkBatchLocked(parent *Node, es []entry) (string, syscall.Errno) {
	if parent.kind != KindDir {
		return "", syscall.ENOTDIR
	}
	if !parent.IsActive() {
		return "", syscall.ENOENT
	}
	d := parent.dir()
	merged := d.children.Load()
	var dirs int32
	for _, e := range es {
		if merged.find(parent, e.hash, e.node.id0.name) != nil {
			return e.node.id0.name, syscall.EEXIST
		}
		if e.node.kind == KindDir {
			dirs++
		}
	}
	d.children.Store(merged.insertAll(es))
	d.rev.Add(1)
	d.subdirs.Add(dirs)
	t.nodes.Add(int64(len(es)))
	return "", 0
}

// Mkdir adds a directory.
func (t *Tree) Mkdir(parent *Node, name string, mode fs.FileMode) (*Node, error) {
	return t.Add(parent, name, NodeSpec{Kind: KindDir, Mode: mode})
}

// AddAttr adds an attribute file whose contents come from src.
func (t *Tree) AddAttr(parent *Node, name string, mode fs.FileMode, src Source) (*Node, error) {
	return t.Add(parent, name, NodeSpec{Kind: KindAttr, Mode: mode, Source: src})
}

// Symlink adds a symlink to target.
func (t *Tree) Symlink(parent *Node, name, target string) (*Node, error) {
	return t.Add(parent, name, NodeSpec{Kind: KindSymlink, Target: target})
}

// linkLocked publishes n as name in parent, then bumps parent's revision.
//
// Preconditions: the write side is held; n is not linked anywhere.
func (t *Tree) linkLocked(parent *Node, name string, n *Node) syscall.Errno {
	if parent.kind != KindDir {
		return syscall.ENOTDIR
	}
	if !parent.IsActive() {
		return syscall.ENOENT
	}
	h := nameHash(name)
	d := parent.dir()
	old := d.children.Load()
	if old.find(parent, h, name) != nil {
		return syscall.EEXIST
	}
	d.children.Store(old.insert(entry{hash: h, node: n}))
	d.rev.Add(1)
	if n.kind == KindDir {
		d.subdirs.Add(1)
	}
	t.nodes.Add(1)
	return 0
}

// unlinkLocked takes n out of the parent and name of id and bumps the
// parent's revision.
//
// Preconditions: the write side is held; n is linked as id says.
func (t *Tree) unlinkLocked(n *Node, id *identity) {
	d := id.parent.dir()
	d.children.Store(d.children.Load().remove(entry{hash: nameHash(id.name), node: n}))
	d.rev.Add(1)
	if n.kind == KindDir {
		d.subdirs.Add(-1)
	}
	t.nodes.Add(-1)
}

// Setattr changes n's mode, owner, group or mtime as root or the owner may
// (kernfs_iop_setattr). The mode keeps the setuid, setgid and sticky bits,
// as kernfs stores the whole mode, but for the setgid bit that a caller
// outside the group cannot set (setattr_prepare). A size on a writable
// attribute is accepted and ignored, as sysfs does for O_TRUNC. It writes
// under the attribute lock where the strategy has one (kernfs_iop_setattr
// from 6.4), else under the tree's write side.
func (t *Tree) Setattr(n *Node, args SetattrArgs, c Cred) error {
	if err := t.lockAttrs(); err != nil {
		return &fs.PathError{Op: "setattr", Path: n.Path(), Err: err}
	}
	e := syscall.Errno(0)
	if !n.IsActive() {
		e = syscall.ENOENT
	} else if e = setattrPrepare(n, n.attr.Load(), &args, c); e == 0 {
		n.attr.Store(applySetattr(n.attr.Load(), args, t.now()))
	}
	t.unlockAttrs()
	if e != 0 {
		return &fs.PathError{Op: "setattr", Path: n.Path(), Err: e}
	}
	id := n.ident.Load()
	t.notify(Event{Op: OpSetattr, Node: n, Parent: id.parent, Name: id.name})
	return nil
}

// lockAttrs enters the side node attributes are written under: the
// strategy's attribute lock where it has one, else the tree's write side.
func (t *Tree) lockAttrs() error {
	if t.attrs != nil {
		t.attrs.AttrLock()
		return nil
	}
	return t.strategy.Lock()
}

// unlockAttrs leaves what lockAttrs entered.
func (t *Tree) unlockAttrs() {
	if t.attrs != nil {
		t.attrs.AttrUnlock()
		return
	}
	t.strategy.Unlock()
}

// Rename moves n to newName in newParent (kernfs_rename_ns). It fails with
// EEXIST if the target name is taken and EINVAL if newParent is inside n.
// Under rcu a concurrent reader may briefly find n under both names; it
// never finds it under neither.
func (t *Tree) Rename(n, newParent *Node, newName string) error {
	fail := func(e error) error {
		return &fs.PathError{Op: "rename", Path: n.Path(), Err: e}
	}
	if e := ValidateName(newName); e != 0 {
		return fail(e)
	}
	if err := t.strategy.Lock(); err != nil {
		return fail(err)
	}
	old := n.ident.Load()
	e := t.renameLocked(n, newParent, newName)
	t.strategy.Unlock()
	if e != 0 {
		return fail(e)
	}
	t.notify(Event{Op: OpRename, Node: n, Parent: newParent, Name: newName, OldParent: old.parent, OldName: old.name})
	return nil
}

// renameLocked links n under its new name before unlinking the old one.
//
// Preconditions: the write side is held.
func (t *Tree) renameLocked(n, newParent *Node, newName string) syscall.Errno {
	old := n.ident.Load()
	switch {
	case n == t.root || !n.IsActive():
		return syscall.ENOENT
	case old.parent == newParent && old.name == newName:
		return 0
	}
	h := nameHash(newName)
	if old.parent == newParent && nameHash(old.name) == h {
		// The entry's key (hash, ino) stays: only the identity changes.
		if newParent.dir().children.Load().find(newParent, h, newName) != nil {
			return syscall.EEXIST
		}
		n.ident.Store(&identity{parent: newParent, name: newName})
		newParent.dir().rev.Add(1)
		return 0
	}
	for p := newParent; p != nil; p = p.Parent() {
		if p == n {
			return syscall.EINVAL
		}
	}
	if e := t.linkLocked(newParent, newName, n); e != 0 {
		return e
	}
	n.ident.Store(&identity{parent: newParent, name: newName})
	t.unlinkLocked(n, old)
	return 0
}
