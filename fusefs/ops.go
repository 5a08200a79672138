package fusefs

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// Lookup is LOOKUP: kernfs_iop_lookup for a new name, d_revalidate for a
// cached one (with entry timeout 0 the kernel asks again on every walk).
// A missing name is cached by the kernel only with a negative timeout.
func (s *Server) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	s.stats.count(opLookup)
	dir := s.node(h.NodeId)
	if dir == nil {
		return fuse.Status(syscall.ESTALE)
	}
	if s.opts.Permissions == PermServer {
		if err := s.tree.Permission(dir, kernfsim.MayExec, cred(h)); err != nil {
			return status(err)
		}
	}
	n, st, e := s.tree.LookupAttr(dir, name)
	if e == syscall.ENOENT && s.opts.NegativeTimeout > 0 {
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(s.opts.NegativeTimeout)
		return fuse.OK
	}
	if e != 0 {
		return fuse.Status(e)
	}
	s.nodes.ref(n)
	out.NodeId, out.Generation = n.Ino(), 1
	out.SetEntryTimeout(s.opts.EntryTimeout)
	out.SetAttrTimeout(s.opts.AttrTimeout)
	fillAttr(&out.Attr, st)
	return fuse.OK
}

// Forget is FORGET and each item of BATCH_FORGET.
func (s *Server) Forget(nodeid, nlookup uint64) {
	s.stats.count(opForget)
	s.nodes.forget(nodeid, nlookup)
}

// GetAttr is GETATTR: kernfs_iop_getattr, and under default_permissions
// the ->permission() refresh of every directory on a path walk.
func (s *Server) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	s.stats.count(opGetattr)
	n := s.node(in.NodeId)
	if n == nil {
		return fuse.Status(syscall.ESTALE)
	}
	fillAttr(&out.Attr, s.tree.Getattr(n))
	out.SetTimeout(s.opts.AttrTimeout)
	return fuse.OK
}

// SetAttr is SETATTR: chmod and chown (root; chmod also the owner),
// truncation of a writable attribute (accepted and ignored, as sysfs),
// and mtime.
func (s *Server) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	s.stats.count(opSetattr)
	n := s.node(in.NodeId)
	if n == nil {
		return fuse.Status(syscall.ESTALE)
	}
	args, ok := setattrArgs(in)
	if !ok {
		return fuse.EINVAL
	}
	if err := s.tree.Setattr(n, args, cred(&in.InHeader)); err != nil {
		return status(err)
	}
	fillAttr(&out.Attr, s.tree.Getattr(n))
	out.SetTimeout(s.opts.AttrTimeout)
	return fuse.OK
}

// setattrArgs converts what a sysfs supports; it reports false for
// anything else (atime only is accepted and ignored).
func setattrArgs(in *fuse.SetAttrIn) (kernfsim.SetattrArgs, bool) {
	var a kernfsim.SetattrArgs
	v := in.Valid
	if v&fuse.FATTR_MODE != 0 {
		a.Valid |= kernfsim.SetMode
		a.Mode = fs.FileMode(in.Mode) & fs.ModePerm
	}
	if v&fuse.FATTR_UID != 0 {
		a.Valid |= kernfsim.SetUid
		a.Uid = in.Uid
	}
	if v&fuse.FATTR_GID != 0 {
		a.Valid |= kernfsim.SetGid
		a.Gid = in.Gid
	}
	if v&fuse.FATTR_SIZE != 0 {
		a.Valid |= kernfsim.SetSize
		a.Size = int64(in.Size)
	}
	if v&(fuse.FATTR_MTIME|fuse.FATTR_MTIME_NOW) != 0 {
		a.Valid |= kernfsim.SetMtime
		a.Mtime = time.Unix(int64(in.Mtime), int64(in.Mtimensec))
		if v&fuse.FATTR_MTIME_NOW != 0 {
			a.Mtime = time.Now()
		}
	}
	known := uint32(fuse.FATTR_MODE | fuse.FATTR_UID | fuse.FATTR_GID | fuse.FATTR_SIZE |
		fuse.FATTR_MTIME | fuse.FATTR_MTIME_NOW | fuse.FATTR_ATIME | fuse.FATTR_ATIME_NOW |
		fuse.FATTR_CTIME | fuse.FATTR_FH | fuse.FATTR_LOCKOWNER | fuse.FATTR_KILL_SUIDGID)
	return a, v&^known == 0
}

// Access is ACCESS (sent only without default_permissions).
func (s *Server) Access(_ <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	s.stats.count(opAccess)
	n := s.node(in.NodeId)
	if n == nil {
		return fuse.Status(syscall.ESTALE)
	}
	mask := kernfsim.Access(in.Mask & 7)
	return status(s.tree.Permission(n, mask, cred(&in.InHeader)))
}

// Readlink is READLINK.
func (s *Server) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	s.stats.count(opReadlink)
	n := s.node(h.NodeId)
	switch {
	case n == nil:
		return nil, fuse.Status(syscall.ESTALE)
	case n.Kind() != kernfsim.KindSymlink:
		return nil, fuse.EINVAL
	}
	return []byte(n.Target()), fuse.OK
}

// StatFs is STATFS: a sysfs reports no blocks.
func (s *Server) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	s.stats.count(opStatfs)
	*out = fuse.StatfsOut{Bsize: kernfsim.PageSize, Frsize: kernfsim.PageSize, NameLen: kernfsim.MaxNameLen}
	return fuse.OK
}
