package kernfsim

import (
	"context"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kernfsim/kernfsim/locking"
)

// Tree is a kernfs-like tree under one locking strategy.
type Tree struct {
	strategy locking.Strategy       // immutable
	reads    locking.ReadSide       // immutable: scoped (one section per walk) or per call, by the strategy's traits
	attrs    locking.AttrLocker     // immutable: the strategy's attribute lock (Traits.SeparateAttrLock), or nil: attributes are the tree lock's
	files    locking.OpenFileLocker // immutable: the strategy's open-file locks (Traits.OpenFileLocks), or nil
	root     *Node                  // immutable
	now      func() time.Time       // immutable
	readCtx  context.Context        // immutable: passed to Show, carries the tree
	gp       GPPolicy               // immutable: teardown policy under grace periods (rcu, percpu)
	lockless bool                   // immutable: Traits.LocklessRevalidate (kernfs74.go)
	perEntry bool                   // immutable: Traits.ReaddirPerEntry (kernfs74.go)
	revals   *revalCounter          // immutable pointer: revalidations, per P (kernfs74.go)

	nextIno atomic.Uint64 // accessed atomically
	nodes   atomic.Int64  // live (linked) nodes, root included; accessed atomically
	frozen  atomic.Bool   // dynamic sources repeat their last value while set

	tdQueued, tdDone atomic.Uint64 // teardowns (removed tops) deferred and completed
	draining         atomic.Int64  // removed nodes whose teardown waits for in-flight users now

	drainMu sync.Mutex
	drained sync.Cond // broadcast when a deactivated node's last user leaves; L is drainMu

	subMu sync.Mutex                      // serialises Subscribe/cancel
	subs  atomic.Pointer[[]*subscription] // copy-on-write under subMu
}

// Options tune a tree.
type Options struct {
	// Now is the clock for attribute times; nil means time.Now.
	Now func() time.Time
	// RootMode is the root directory's mode; 0 means 0755.
	RootMode fs.FileMode
	// GP orders teardown after a grace period under a strategy with
	// grace periods (rcu, percpu); "" means GPNormal. Other strategies
	// drain and tear down in Remove.
	GP GPPolicy
}

// New returns an empty tree (a root directory only) under strategy s.
func New(s locking.Strategy, opts Options) *Tree {
	t := &Tree{strategy: s, now: opts.Now, gp: opts.GP}
	if t.gp == "" {
		t.gp = GPNormal
	}
	if t.now == nil {
		t.now = time.Now
	}
	tr := s.Traits()
	if !tr.AcceptsWriters && tr.DrainBeforeUnlink {
		panic("kernfsim: a strategy that refuses writers must unlink with the deactivation (Traits.DrainBeforeUnlink)") // broken invariant of the strategy
	}
	t.reads = locking.ReadSideOf(s)
	t.lockless, t.perEntry, t.revals = tr.LocklessRevalidate, tr.ReaddirPerEntry, new(revalCounter)
	t.attrs, t.files = lockersOf(s)
	t.drained.L = &t.drainMu
	t.readCtx = context.WithValue(context.Background(), treeKey{}, t)
	mode := opts.RootMode
	if mode == 0 {
		mode = 0o755
	}
	root := NodeSpec{Kind: KindDir}
	t.root = t.newSlab(sizeOf(root.Kind)).node(root, &Attr{Mode: mode, Mtime: t.now(), Ctime: t.now()}, nil, "")
	t.nodes.Store(1)
	return t
}

// Strategy is the tree's lock strategy.
func (t *Tree) Strategy() locking.Strategy { return t.strategy }

// Now is the tree's clock, for the times of nodes its contents make.
func (t *Tree) Now() time.Time { return t.now() }

// Root is the tree's root directory.
func (t *Tree) Root() *Node { return t.root }

// Nodes is the number of nodes linked into the tree, the root included.
func (t *Tree) Nodes() int64 { return t.nodes.Load() }

// Seal ends construction: under strategy none, every later writer fails.
func (t *Tree) Seal() { t.strategy.Seal() }

// Freeze makes dynamic sources (Func) repeat their last value while on, so
// a conformance checker sees stable contents.
func (t *Tree) Freeze(on bool) { t.frozen.Store(on) }

// lockersOf returns the attribute and open-file locks s declares by its
// traits (Traits.SeparateAttrLock, OpenFileLocks), nil where it declares
// none.
func lockersOf(s locking.Strategy) (locking.AttrLocker, locking.OpenFileLocker) {
	tr := s.Traits()
	a, isA := s.(locking.AttrLocker)
	f, isF := s.(locking.OpenFileLocker)
	switch {
	case tr.SeparateAttrLock && !isA:
		panic("kernfsim: a strategy with Traits.SeparateAttrLock must be a locking.AttrLocker") // broken invariant of the strategy
	case tr.OpenFileLocks && !isF:
		panic("kernfsim: a strategy with Traits.OpenFileLocks must be a locking.OpenFileLocker") // broken invariant of the strategy
	}
	if !tr.SeparateAttrLock {
		a = nil
	}
	if !tr.OpenFileLocks {
		f = nil
	}
	return a, f
}

func (t *Tree) rlock() locking.ReadToken    { return t.strategy.RLock() }
func (t *Tree) runlock(r locking.ReadToken) { t.strategy.RUnlock(r) }

// rlockAttrs enters the side node attributes are read under on their own
// (permission, getattr): the strategy's attribute lock where it has one
// (kernfs_iattr_rwsem from 6.4), else the tree's read side.
func (t *Tree) rlockAttrs() locking.ReadToken {
	if t.attrs != nil {
		return t.attrs.AttrRLock()
	}
	return t.rlock()
}

// runlockAttrs leaves what rlockAttrs entered.
func (t *Tree) runlockAttrs(r locking.ReadToken) {
	if t.attrs != nil {
		t.attrs.AttrRUnlock(r)
		return
	}
	t.runlock(r)
}

// rlockAttrsIn enters the attribute lock's read side inside a held tree
// read side, for a check that reads attributes after a lookup (may_create,
// may_delete); where the strategy has no attribute lock the held read
// side covers them and it does nothing.
func (t *Tree) rlockAttrsIn() locking.ReadToken {
	if t.attrs != nil {
		return t.attrs.AttrRLock()
	}
	return 0
}

// runlockAttrsIn leaves what rlockAttrsIn entered.
func (t *Tree) runlockAttrsIn(r locking.ReadToken) {
	if t.attrs != nil {
		t.attrs.AttrRUnlock(r)
	}
}

// lookupLocked finds the active child name of dir. It also returns dir's
// revision read before the children, so a negative result can be cached
// and revalidated: writers publish children before bumping the revision.
//
// Preconditions: the read or write side is held.
func lookupLocked(dir *Node, name string, hash uint64) (*Node, uint64, syscall.Errno) {
	if dir.kind != KindDir {
		return nil, 0, syscall.ENOTDIR
	}
	d := dir.dir()
	rev := d.rev.Load()
	if !dir.IsActive() {
		return nil, rev, syscall.ENOENT
	}
	n := d.children.Load().find(dir, hash, name)
	if n == nil || !n.IsActive() {
		return nil, rev, syscall.ENOENT
	}
	return n, rev, 0
}

// Lookup returns the active child called name of dir (kernfs_iop_lookup).
func (t *Tree) Lookup(dir *Node, name string) (*Node, error) {
	n, _, err := t.LookupRev(dir, name)
	return n, err
}

// LookupErrno is Lookup for servers that map errors to an errno anyway: it
// allocates nothing, also when the name is missing.
func (t *Tree) LookupErrno(dir *Node, name string) (*Node, syscall.Errno) {
	r := t.rlock()
	n, _, e := lookupLocked(dir, name, nameHash(name))
	t.runlock(r)
	return n, e
}

// LookupAttr is LookupErrno that also returns the node's attributes, read
// in the same read-side section (kernfs_iop_lookup refreshes the new
// inode under the lock it looked up with).
func (t *Tree) LookupAttr(dir *Node, name string) (*Node, Stat, syscall.Errno) {
	r := t.rlock()
	n, _, e := lookupLocked(dir, name, nameHash(name))
	var st Stat
	if e == 0 {
		st = getattrLocked(n)
	}
	t.runlock(r)
	return n, st, e
}

// LookupRev is Lookup that also returns dir's revision as seen by the
// lookup, for caching a negative result (see Revalidate).
func (t *Tree) LookupRev(dir *Node, name string) (*Node, uint64, error) {
	r := t.rlock()
	n, rev, e := lookupLocked(dir, name, nameHash(name))
	t.runlock(r)
	if e != 0 {
		return nil, rev, &fs.PathError{Op: "lookup", Path: joinPath(dir, name), Err: e}
	}
	return n, rev, nil
}

// revalidateLocked is kernfs_dop_revalidate. A positive entry (n != nil) is
// valid while n is active and still called name in dir; a negative entry
// while dir's revision is still rev.
//
// Preconditions: the read side is held, or the strategy has
// Traits.LocklessRevalidate (every field read is an atomic load).
func revalidateLocked(dir *Node, name string, n *Node, rev uint64) bool {
	if n == nil {
		d := dir.dir()
		return dir.IsActive() && d != nil && d.rev.Load() == rev
	}
	if !n.IsActive() {
		return false
	}
	id := n.ident.Load()
	return id.parent == dir && id.name == name
}

// Revalidate reports whether a cached lookup result is still true: n found
// as name in dir, or (n == nil) name missing from dir at revision rev.
// It takes the read side, or no lock under Traits.LocklessRevalidate.
func (t *Tree) Revalidate(dir *Node, name string, n *Node, rev uint64) bool {
	t.revals.add()
	if t.lockless {
		return revalidateLocked(dir, name, n, rev) // atomic loads only: see revalidate
	}
	r := t.rlock()
	ok := revalidateLocked(dir, name, n, rev)
	t.runlock(r)
	return ok
}

// permissionLocked is kernfs_iop_permission: generic_permission on the
// node's current attributes.
//
// Preconditions: the side attributes are read under is held (the
// attribute lock's read side, or the tree's read or write side).
func permissionLocked(n *Node, mask Access, c Cred) syscall.Errno {
	return permitted(n.attr.Load(), n.kind == KindDir, mask, c)
}

// Permission checks mask (MayRead|MayWrite|MayExec) for c on n, under
// the attribute lock where the strategy has one.
func (t *Tree) Permission(n *Node, mask Access, c Cred) error {
	r := t.rlockAttrs()
	e := permissionLocked(n, mask, c)
	t.runlockAttrs(r)
	if e != 0 {
		return &fs.PathError{Op: "access", Path: n.Path(), Err: e}
	}
	return nil
}

// MayCreate is the VFS's may_create for name in dir, which every create,
// link and rename onto a new name passes before the filesystem is asked:
// EEXIST if name exists, ENOENT if dir was removed, ENOTDIR if dir is not
// a directory, EACCES without write and search permission on dir.
func (t *Tree) MayCreate(dir *Node, name string, c Cred) error {
	r := t.rlock()
	_, _, e := lookupLocked(dir, name, nameHash(name))
	switch e {
	case 0:
		e = syscall.EEXIST
	case syscall.ENOENT:
		if dir.IsActive() {
			a := t.rlockAttrsIn()
			e = permissionLocked(dir, MayWrite|MayExec, c)
			t.runlockAttrsIn(a)
		}
	}
	t.runlock(r)
	if e != 0 {
		return &fs.PathError{Op: "create", Path: joinPath(dir, name), Err: e}
	}
	return nil
}

// MayDelete is the VFS's may_delete for name in dir, which every unlink,
// rmdir and rename passes first: ENOENT if name is missing, EACCES without
// write and search permission on dir, EPERM in a sticky directory for a
// caller who owns neither it nor the victim (check_sticky).
func (t *Tree) MayDelete(dir *Node, name string, c Cred) error {
	r := t.rlock()
	n, _, e := lookupLocked(dir, name, nameHash(name))
	if e == 0 {
		a := t.rlockAttrsIn()
		e = permissionLocked(dir, MayWrite|MayExec, c)
		if e == 0 && stickyRefuses(dir.attr.Load(), n.attr.Load(), c) {
			e = syscall.EPERM
		}
		t.runlockAttrsIn(a)
	}
	t.runlock(r)
	if e != 0 {
		return &fs.PathError{Op: "delete", Path: joinPath(dir, name), Err: e}
	}
	return nil
}

// MayLink is the VFS's may_linkat with fs.protected_hardlinks on (the
// default): a caller other than root may hard-link a node it owns, or a
// regular file, neither setuid nor setgid-executable, that it may read and
// write; else EPERM.
func (t *Tree) MayLink(n *Node, c Cred) error {
	r := t.rlockAttrs()
	a := n.attr.Load()
	t.runlockAttrs(r)
	if c.Uid == 0 || c.Uid == a.Uid {
		return nil
	}
	e := syscall.EPERM
	if n.kind == KindAttr && a.Mode&fs.ModeSetuid == 0 && a.Mode&(fs.ModeSetgid|0o010) != fs.ModeSetgid|0o010 {
		switch e = permitted(a, false, MayRead|MayWrite, c); e {
		case 0, ErrGroupsNeeded:
		default:
			e = syscall.EPERM
		}
	}
	if e != 0 {
		return &fs.PathError{Op: "link", Path: n.Path(), Err: e}
	}
	return nil
}

// getattrLocked copies n's attributes.
//
// Preconditions: the side attributes are read under is held (the
// attribute lock's read side, or the tree's read or write side); for
// LookupAttr, the tree's read side (kernfs_init_inode refreshes a new
// inode under the lookup's lock).
func getattrLocked(n *Node) Stat {
	st := Stat{Attr: *n.attr.Load(), Ino: n.ino, Kind: n.kind, Nlink: 1}
	switch n.kind {
	case KindDir:
		st.Nlink = 2 + uint32(n.dir().subdirs.Load())
	case KindAttr:
		st.Size = PageSize
	case KindSymlink:
		st.Size = int64(len(n.Target()))
	}
	return st
}

// Getattr returns n's attributes (kernfs_iop_getattr), under the
// attribute lock where the strategy has one. A removed node still has
// attributes until its last reference goes, as an inode does.
func (t *Tree) Getattr(n *Node) Stat {
	r := t.rlockAttrs()
	st := getattrLocked(n)
	t.runlockAttrs(r)
	return st
}

// Dirent is one directory entry. Off is its position: pass it back to
// Readdir to continue after it. Offsets are name hashes, so they stay valid
// while the directory changes.
type Dirent struct {
	Name string
	Ino  uint64
	Kind Kind
	Off  uint64
}

// Readdir calls fn for each active child of dir after offset off (0 starts
// at the beginning), in offset order, until fn returns false. It snapshots
// the children under the read side and calls fn without any lock, as
// kernfs_fop_readdir drops its lock around dir_emit. Under
// Traits.ReaddirPerEntry it enters the read side once per entry instead
// (readdirPerEntry).
func (t *Tree) Readdir(dir *Node, off uint64, fn func(Dirent) bool) error {
	if dir.kind != KindDir {
		return &fs.PathError{Op: "readdir", Path: dir.Path(), Err: syscall.ENOTDIR}
	}
	if t.perEntry {
		return t.readdirPerEntry(dir, off, fn)
	}
	r := t.rlock()
	snap, active := dir.dir().children.Load(), dir.IsActive()
	t.runlock(r)
	if !active {
		return &fs.PathError{Op: "readdir", Path: dir.Path(), Err: syscall.ENOENT}
	}
	snap.each(off, func(e entry) bool {
		id, ok := e.current(dir)
		if !ok || !e.node.IsActive() {
			return true
		}
		return fn(Dirent{Name: id.name, Ino: e.node.ino, Kind: e.node.kind, Off: e.hash})
	})
	return nil
}

// joinPath is dir's path joined with name, for error messages.
func joinPath(dir *Node, name string) string {
	p := dir.Path()
	if p == "" {
		return name
	}
	return p + "/" + name
}
