package sysfs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"syscall"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// The cgroup half of the in-tree ABI, added where the tree has a cgroup
// v2 hierarchy (cgroup.go):
//
//	bus/kernfsim/new_cgroup     (0200) write "PATH" to make the cgroup fs/cgroup/PATH, as mkdir(2) there would
//	bus/kernfsim/delete_cgroup  (0200) write "PATH" to remove it, as rmdir(2) would
//
// A container runtime makes a container's cgroup when the container
// starts and removes it when it stops. The kernel's cgroup_mkdir creates
// the directory and its interface files (kernfs_create_dir, then
// kernfs_add_one per file, each under kernfs's rwsem taken for writing)
// and publishes them at once (kernfs_activate); cgroup_rmdir removes it
// (kernfs_remove); both under cgroup_mutex. Here a new cgroup's directory
// and files appear together under one write-side acquisition (AddGroup),
// and a removal is RemoveNamed's. The ABI's own cgroup_mutex serialises
// the checks and the creations; a removal is marked under it and runs
// after it is released, so that the grace period a removal may wait for
// (rcu's normal teardown) holds up no other cgroup write, as kfree_rcu
// does not in the kernel; a cgroup made in one being removed gets ENOENT.
// Bad input (not a path, a name the tree refuses) gets EINVAL, a missing
// cgroup or parent ENOENT, a path through a file ENOTDIR, a cgroup that
// exists EEXIST, one with child cgroups or processes EBUSY, a parent at
// the tree's limit ENOSPC, a cgroup past cgroup.max.depth or
// cgroup.max.descendants of one above it EAGAIN (cgroup_limits.go), a
// tree under lock none EROFS; nothing changes on error.

// cgroupABI is new_cgroup and delete_cgroup of one hierarchy.
type cgroupABI struct {
	t    *kernfsim.Tree
	root *kernfsim.Node   // fs/cgroup; immutable
	h    *cgroupHierarchy // immutable
	max  int              // immutable: most cgroups in one parent

	// mu is cgroup_mutex: it serialises the cgroup writes' checks and
	// creations, taken outside the tree's write side.
	mu sync.Mutex
	// removing are the cgroups whose removal has been checked and not
	// yet finished: no cgroup is made below them. Protected by mu.
	removing map[*kernfsim.Node]bool
}

// NewCgroup makes the cgroup at path (below fs/cgroup, as
// client.ParseCgroupPath returns it) with its interface files, as
// mkdir(2) in a cgroup v2 hierarchy does. Without a hierarchy it fails
// with ENODEV.
func (a *ABI) NewCgroup(path string) error {
	if a.cg == nil {
		return &fs.PathError{Op: "new_cgroup", Path: path, Err: syscall.ENODEV}
	}
	return a.cg.mkdir(path)
}

// DeleteCgroup removes the cgroup at path, which must have no child
// cgroups (EBUSY), as rmdir(2) does. ctx is the Store's, as Delete's.
func (a *ABI) DeleteCgroup(ctx context.Context, path string) error {
	if a.cg == nil {
		return &fs.PathError{Op: "delete_cgroup", Path: path, Err: syscall.ENODEV}
	}
	return a.cg.rmdir(ctx, path)
}

func (g *cgroupABI) mkdir(path string) error {
	if err := g.writable("new_cgroup", path); err != nil {
		return err
	}
	parent, name, err := g.parent("new_cgroup", path)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for d := parent; d != nil && d != g.root; d = d.Parent() {
		if g.removing[d] {
			return &fs.PathError{Op: "new_cgroup", Path: path, Err: syscall.ENOENT}
		}
	}
	if _, err := g.t.Lookup(parent, name); err == nil {
		return &fs.PathError{Op: "new_cgroup", Path: path, Err: syscall.EEXIST}
	}
	if !g.hierarchyAllows(parent) {
		return &fs.PathError{Op: "new_cgroup", Path: path, Err: syscall.EAGAIN}
	}
	_, err = g.t.AddGroup([]kernfsim.Placement{{Parent: parent, Name: name,
		Spec: kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755}, Children: g.h.newCgroup(0, 0).entries(), MaxSubdirs: g.max}})
	return cgroupError("new_cgroup", path, err)
}

func (g *cgroupABI) rmdir(ctx context.Context, path string) error {
	if err := g.writable("delete_cgroup", path); err != nil {
		return err
	}
	parent, name, err := g.parent("delete_cgroup", path)
	if err != nil {
		return err
	}
	n, err := g.markRemoving(parent, name, path)
	if err != nil {
		return err
	}
	err = g.t.RemoveNamed(ctx, kernfsim.ChildRef{Parent: parent, Name: name})
	g.mu.Lock()
	delete(g.removing, n)
	g.mu.Unlock()
	return cgroupError("delete_cgroup", path, err)
}

// writable is locking.ErrReadOnly (EROFS) where the tree takes no
// writers (lock none), before any other check, as mkdir(2) and rmdir(2)
// on a read-only mount fail with EROFS before they look at the name.
func (g *cgroupABI) writable(op, path string) error {
	if !g.t.Strategy().Traits().AcceptsWriters {
		return &fs.PathError{Op: op, Path: path, Err: locking.ErrReadOnly}
	}
	return nil
}

// markRemoving checks that name in parent is a cgroup without children,
// not already being removed, and marks it removing.
func (g *cgroupABI) markRemoving(parent *kernfsim.Node, name, path string) (*kernfsim.Node, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, err := g.t.Lookup(parent, name)
	switch {
	case err != nil || g.removing[n]:
		return nil, &fs.PathError{Op: "delete_cgroup", Path: path, Err: syscall.ENOENT}
	case n.Kind() != kernfsim.KindDir:
		return nil, &fs.PathError{Op: "delete_cgroup", Path: path, Err: syscall.ENOTDIR}
	case hasSubdir(g.t, n) || populated(g.t, n):
		return nil, &fs.PathError{Op: "delete_cgroup", Path: path, Err: syscall.EBUSY}
	}
	if g.removing == nil {
		g.removing = map[*kernfsim.Node]bool{}
	}
	g.removing[n] = true
	return n, nil
}

// parent is the directory path's last name is in, below the hierarchy's
// root, and that name; every name is checked as the tree checks names.
func (g *cgroupABI) parent(op, path string) (*kernfsim.Node, string, error) {
	names := strings.Split(path, "/")
	for _, name := range names {
		if kernfsim.ValidateName(name) != 0 {
			return nil, "", &fs.PathError{Op: op, Path: path, Err: syscall.EINVAL}
		}
	}
	d := g.root
	for _, name := range names[:len(names)-1] {
		n, err := g.t.Lookup(d, name)
		switch {
		case err != nil:
			return nil, "", &fs.PathError{Op: op, Path: path, Err: syscall.ENOENT}
		case n.Kind() != kernfsim.KindDir:
			return nil, "", &fs.PathError{Op: op, Path: path, Err: syscall.ENOTDIR}
		}
		d = n
	}
	return d, names[len(names)-1], nil
}

// hasSubdir reports whether the directory n has a directory in it.
func hasSubdir(t *kernfsim.Tree, n *kernfsim.Node) bool {
	found := false
	t.Readdir(n, 0, func(d kernfsim.Dirent) bool {
		found = d.Kind == kernfsim.KindDir
		return !found
	})
	return found
}

// cgroupError is the tree's error err as op's on path: the errno it
// carries, with the cgroup's path (locking.ErrReadOnly kept, which the
// server answers EROFS); nil for nil.
func cgroupError(op, path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, locking.ErrReadOnly):
		return &fs.PathError{Op: op, Path: path, Err: locking.ErrReadOnly} // EROFS, as every other control file under none
	}
	return &fs.PathError{Op: op, Path: path, Err: kernfsim.Errno(err)}
}

// newCgroupFile is bus/kernfsim/new_cgroup.
type newCgroupFile struct{ g *cgroupABI }

func (f newCgroupFile) Show(context.Context, *bytes.Buffer) error { return syscall.EACCES }

func (f newCgroupFile) Store(_ context.Context, data []byte) error {
	path, err := client.ParseCgroupPath(data)
	if err != nil {
		return syscall.EINVAL
	}
	return f.g.mkdir(path)
}

// deleteCgroupFile is bus/kernfsim/delete_cgroup.
type deleteCgroupFile struct{ g *cgroupABI }

func (f deleteCgroupFile) Show(context.Context, *bytes.Buffer) error { return syscall.EACCES }

func (f deleteCgroupFile) Store(ctx context.Context, data []byte) error {
	path, err := client.ParseCgroupPath(data)
	if err != nil {
		return syscall.EINVAL
	}
	return f.g.rmdir(ctx, path)
}
