package kernfsim

import (
	"io"
	"io/fs"
	"os"
	"syscall"
)

// maxSymlinks is how many symlinks one walk follows before ELOOP (the
// kernel's MAXSYMLINKS).
const maxSymlinks = 40

// WalkerOptions tune a Walker.
type WalkerOptions struct {
	// Negatives caches missing names (validated by the parent's revision).
	// nil chooses per era: never under mutex (kernfs before 5.15), always
	// otherwise.
	Negatives *bool
	// Buckets is the dentry hash table size; 0 means 1<<16.
	Buckets int
	// RefWalk makes the shared writes of the kernel's ref-walk, which a
	// walk in sysfs falls back to: a reference taken and dropped on each
	// dentry passed, and each directory's inode refreshed under an
	// inode-attribute lock (refwalk.go). Off, the walker shares nothing
	// outside the strategy's lock.
	RefWalk bool
	// MountDepth is how many dentries above the tree's root a walk from
	// "/" holds references on in ref-walk, with RefWalk: 1 for a tree
	// mounted at /sys (the process's root, "/"; rcu-walk passes "sys"
	// without writing, and falls back to ref-walk at sysfs's root).
	MountDepth int
}

// Walker resolves paths against a Tree the way the kernel's path walk does
// against kernfs: per component, an exec permission check on the directory,
// then revalidate the cached dentry or look the name up. It keeps its own
// dentry cache. It is safe for concurrent use.
//
// The strategy's read side is entered through a locking.ReadSide: where
// reads are not scoped (mutex, rwsem and the later ones) every lookup,
// revalidate and permission call takes it on its own (ref-walk, as kernfs
// took its lock per call); where they are (rcu, none) one read section
// covers the whole walk (rcu-walk). Under a strategy with an attribute
// lock (Traits.SeparateAttrLock) permission checks take that lock instead;
// under one that revalidates without a lock (Traits.LocklessRevalidate,
// kernfs74) revalidations take nothing. Negative dentries are cached if the strategy caches
// negatives, unless WalkerOptions.Negatives says otherwise.
type Walker struct {
	t         *Tree   // immutable
	negatives bool    // immutable
	cache     *dcache // immutable pointer
	root      *dentry // immutable
	ref       refWalk // immutable: ref-walk's shared writes, or off
}

// NewWalker returns a walker over t.
func NewWalker(t *Tree, opts WalkerOptions) *Walker {
	neg := t.strategy.Traits().CachesNegatives
	if opts.Negatives != nil {
		neg = *opts.Negatives
	}
	if opts.Buckets == 0 {
		opts.Buckets = 1 << 16
	}
	ref := newRefWalk(opts.RefWalk, max(0, opts.MountDepth), t.attrs)
	return &Walker{t: t, negatives: neg, cache: newDcache(opts.Buckets), ref: ref,
		root: &dentry{node: t.root, lines: ref.newLines()}}
}

// Tree is the tree the walker resolves in.
func (w *Walker) Tree() *Tree { return w.t }

// CachedDentries is the number of dentries cached, negatives included.
func (w *Walker) CachedDentries() int64 { return w.cache.size.Load() }

// Resolve returns the node at path (relative to the root; a leading '/' is
// ignored), following symlinks, checking exec permission on every
// directory for c. Errors are *fs.PathError with op "lookup".
func (w *Walker) Resolve(c Cred, path string) (*Node, error) {
	return w.resolve(c, path, true)
}

// Lresolve is Resolve that does not follow a final symlink.
func (w *Walker) Lresolve(c Cred, path string) (*Node, error) {
	return w.resolve(c, path, false)
}

// ResolveErrno is Resolve for callers that want the errno, as a system
// call returns it: it allocates nothing, also when the path is missing
// (a Go error value would be one allocation per failed walk, which the
// kernel's walk does not make).
func (w *Walker) ResolveErrno(c Cred, path string) (*Node, syscall.Errno) {
	return w.resolveErrno(c, path, true, false)
}

func (w *Walker) resolve(c Cred, path string, follow bool) (*Node, error) {
	n, e := w.resolveErrno(c, path, follow, false)
	if e != 0 {
		return nil, &fs.PathError{Op: "lookup", Path: path, Err: e}
	}
	return n, nil
}

// resolveErrno walks path. checked says the caller goes on to check the
// node's inode (open's may_open, stat's getattr), which refreshes it under
// RefWalk.
func (w *Walker) resolveErrno(c Cred, path string, follow, checked bool) (*Node, syscall.Errno) {
	r := w.t.reads.EnterScope()
	links := 0
	w.ref.enter(w.root)
	d, e := w.walk(c, w.root, path, follow, &links)
	if e == 0 {
		if checked {
			w.ref.refresh(d)
		}
		w.ref.put(d) // an open file's reference lives until close; the count of writes is what matters
	}
	w.ref.leave()
	w.t.reads.ExitScope(r)
	if e != 0 {
		return nil, e
	}
	return d.node, 0
}

// walk resolves path from start and returns its dentry. With RefWalk the
// caller holds a reference on start, and walk hands it one on the dentry
// it returns, or none if it fails.
func (w *Walker) walk(c Cred, start *dentry, path string, follow bool, links *int) (*dentry, syscall.Errno) {
	cur := start
	for path != "" {
		var name string
		name, path = nextComponent(path)
		if name == "" || name == "." {
			continue
		}
		if cur.node.kind != KindDir {
			w.ref.put(cur)
			return nil, syscall.ENOTDIR
		}
		if e := w.permission(cur, MayExec, c); e != 0 {
			w.ref.put(cur)
			return nil, e
		}
		if name == ".." {
			if cur.parent != nil {
				w.ref.get(cur.parent)
				w.ref.put(cur)
				cur = cur.parent
			}
			continue
		}
		next, e := w.step(cur, name)
		if e != 0 {
			w.ref.put(cur)
			return nil, e
		}
		w.ref.get(next)
		if next.node.kind == KindSymlink && (path != "" || follow) {
			w.ref.put(next)
			if *links++; *links > maxSymlinks {
				w.ref.put(cur)
				return nil, syscall.ELOOP
			}
			from := cur
			target := next.node.Target()
			if len(target) > 0 && target[0] == '/' {
				from = w.root
			}
			w.ref.get(from)
			if next, e = w.walk(c, from, target, true, links); e != 0 {
				w.ref.put(cur)
				return nil, e
			}
		}
		w.ref.put(cur)
		cur = next
	}
	return cur, 0
}

// nextComponent splits the first component off path.
func nextComponent(path string) (name, rest string) {
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			return path[:i], path[i+1:]
		}
	}
	return path, ""
}

// step is one lookup_fast/lookup_slow: revalidate a cached dentry for name
// under dir, or look name up and cache the result.
//
// Preconditions: dir is a directory.
func (w *Walker) step(dir *dentry, name string) (*dentry, syscall.Errno) {
	h := nameHash(name)
	if d := w.cache.get(dir, name, h); d != nil {
		if w.revalidate(dir.node, name, d.node, d.rev) {
			if d.node == nil {
				w.ref.get(d) // d_lookup's reference on the negative dentry, and its dput
				w.ref.put(d)
				return nil, syscall.ENOENT
			}
			return d, 0
		}
		w.cache.drop(d, h)
	}
	n, rev, e := w.lookup(dir.node, name, h)
	switch {
	case e == syscall.ENOENT && w.negatives:
		w.cache.put(&dentry{parent: dir, name: name, rev: rev, lines: w.ref.newLines()}, h)
		return nil, e
	case e != 0:
		return nil, e
	}
	return w.cache.put(&dentry{parent: dir, name: name, node: n, lines: w.ref.newLines()}, h), 0
}

// permission is kernfs_iop_permission on d's node, with ref-walk's
// refresh of its inode (RefWalk). Under a strategy with an attribute lock
// (kernfs64) one read section of that lock covers both, as
// kernfs_iop_permission takes kernfs_iattr_rwsem around
// kernfs_refresh_inode and generic_permission; otherwise the refresh takes
// ref-walk's own stand-in for that lock and the check the tree's read side.
func (w *Walker) permission(d *dentry, mask Access, c Cred) syscall.Errno {
	if a := w.t.attrs; a != nil {
		r := a.AttrRLock()
		w.ref.refreshLocked(d)
		e := permissionLocked(d.node, mask, c)
		a.AttrRUnlock(r)
		return e
	}
	w.ref.refresh(d)
	r := w.t.reads.EnterCall()
	e := permissionLocked(d.node, mask, c)
	w.t.reads.ExitCall(r)
	return e
}

func (w *Walker) revalidate(dir *Node, name string, n *Node, rev uint64) bool {
	return w.t.revalidate(dir, name, n, rev)
}

func (w *Walker) lookup(dir *Node, name string, h uint64) (*Node, uint64, syscall.Errno) {
	r := w.t.reads.EnterCall()
	n, rev, e := lookupLocked(dir, name, h)
	w.t.reads.ExitCall(r)
	return n, rev, e
}

// Stat resolves path and returns its attributes (stat(2): LOOKUP then
// GETATTR).
func (w *Walker) Stat(c Cred, path string) (Stat, error) {
	st, e := w.StatErrno(c, path)
	if e != 0 {
		return Stat{}, &fs.PathError{Op: "lookup", Path: path, Err: e}
	}
	return st, nil
}

// StatErrno is Stat that returns an errno and allocates nothing.
func (w *Walker) StatErrno(c Cred, path string) (Stat, syscall.Errno) {
	n, e := w.resolveErrno(c, path, true, true)
	if e != 0 {
		return Stat{}, e
	}
	return w.t.Getattr(n), 0
}

// Open resolves path and opens it with flags (os.O_RDONLY etc.) for c.
func (w *Walker) Open(c Cred, path string, flags int) (*File, error) {
	n, err := w.Resolve(c, path)
	if err != nil {
		return nil, err
	}
	f, err := w.t.Open(n, flags, c)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err.(*fs.PathError).Err}
	}
	return f, nil
}

// ReadFileErrno is ReadFile returning an errno, as read(2) would: it
// allocates nothing when the path is missing or closed to c.
func (w *Walker) ReadFileErrno(c Cred, path string, buf []byte) (int, syscall.Errno) {
	n, e := w.resolveErrno(c, path, true, true)
	if e != 0 {
		return 0, e
	}
	f, e := w.t.open(n, os.O_RDONLY, c)
	if e != 0 {
		return 0, e
	}
	nr, err := f.Read(buf, 0)
	f.Release()
	if err == nil || err == io.EOF {
		return nr, 0
	}
	return 0, Errno(err)
}

// ReadFile is the benchmark's operation: open, one read of len(buf) bytes
// at offset 0, release. It returns the bytes read.
func (w *Walker) ReadFile(c Cred, path string, buf []byte) (int, error) {
	f, err := w.Open(c, path, os.O_RDONLY)
	if err != nil {
		return 0, err
	}
	n, err := f.Read(buf, 0)
	f.Release()
	if err == io.EOF {
		err = nil
	}
	return n, err
}
