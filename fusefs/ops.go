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
// A missing name is answered by the server's NegativeRule: a negative
// entry the kernel keeps, or a plain ENOENT it does not cache.
func (s *Server) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	s.stats.count(opLookup)
	dir := s.node(h.NodeId)
	if dir == nil {
		return fuse.Status(syscall.ESTALE)
	}
	if s.opts.Permissions == PermServer {
		if err := s.permission(h, dir, kernfsim.MayExec); err != nil {
			return status(err)
		}
	}
	n, st, e := s.tree.LookupAttr(dir, name)
	if e == syscall.ENOENT && s.neg.Timeout > 0 {
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(s.neg.Timeout)
		return fuse.OK
	}
	if e != 0 {
		return fuse.Status(e)
	}
	s.nodes.ref(n)
	out.NodeId, out.Generation = n.Ino(), 1
	out.SetEntryTimeout(s.opts.EntryTimeout)
	out.SetAttrTimeout(s.opts.AttrTimeout)
	fillStat(&out.Attr, &st)
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
	st := s.tree.Getattr(n)
	fillStat(&out.Attr, &st)
	out.SetTimeout(s.opts.AttrTimeout)
	return fuse.OK
}

// SetAttr is SETATTR: chmod and chown (root; chmod also the owner),
// truncation of a writable attribute (accepted and ignored, as sysfs),
// and mtime. Under --permissions server the caller's supplementary groups
// are read where they matter: a truncation refused to its uid and gid, a
// chmod that sets the setgid bit on a node whose group is not its gid
// (groups.go).
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
	if err := s.setattr(&in.InHeader, n, args); err != nil {
		return status(err)
	}
	st := s.tree.Getattr(n)
	fillStat(&out.Attr, &st)
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
		a.Mode = fileMode(in.Mode)
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

// setattr is Tree.Setattr for the caller of h, with its supplementary
// groups where they matter. Under default_permissions it is root's: the
// kernel has run setattr_prepare (ownership, the setgid bit) and the
// truncation's write check with the caller's real groups.
func (s *Server) setattr(h *fuse.InHeader, n *kernfsim.Node, args kernfsim.SetattrArgs) error {
	if s.opts.Permissions != PermServer {
		return s.tree.Setattr(n, args, kernfsim.RootCred)
	}
	return withGroups(h, func(c kernfsim.Cred) error { return s.tree.Setattr(n, args, c) })
}

// fileMode is a FUSE mode's permission, setuid, setgid and sticky bits.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m) & fs.ModePerm
	for _, b := range specialBits {
		if m&b.unix != 0 {
			mode |= b.mode
		}
	}
	return mode
}

// unixMode is fileMode's inverse.
func unixMode(mode fs.FileMode) uint32 {
	m := uint32(mode & fs.ModePerm)
	if mode&kernfsim.ModeSpecial == 0 {
		return m
	}
	for _, b := range specialBits {
		if mode&b.mode != 0 {
			m |= b.unix
		}
	}
	return m
}

var specialBits = [...]struct {
	unix uint32
	mode fs.FileMode
}{{syscall.S_ISUID, fs.ModeSetuid}, {syscall.S_ISGID, fs.ModeSetgid}, {syscall.S_ISVTX, fs.ModeSticky}}

// fillStat converts a kernfsim stat to the FUSE attributes a reply
// carries, with the setuid, setgid and sticky bits (fillAttr, the
// comparison server's, has none). It writes the reply in one pass and
// converts each time once (atime is mtime): every LOOKUP and GETATTR
// reply goes through it.
func fillStat(out *fuse.Attr, st *kernfsim.Stat) {
	msec, mnsec := uint64(st.Mtime.Unix()), uint32(st.Mtime.Nanosecond())
	*out = fuse.Attr{
		Ino: st.Ino, Size: uint64(st.Size), Nlink: st.Nlink,
		Mode:  typeBits(st.Kind) | unixMode(st.Mode),
		Owner: fuse.Owner{Uid: st.Uid, Gid: st.Gid}, Blksize: kernfsim.PageSize,
		Atime: msec, Atimensec: mnsec, Mtime: msec, Mtimensec: mnsec,
		Ctime: uint64(st.Ctime.Unix()), Ctimensec: uint32(st.Ctime.Nanosecond()),
	}
}

// Access is ACCESS (sent only without default_permissions).
func (s *Server) Access(_ <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	s.stats.count(opAccess)
	n := s.node(in.NodeId)
	if n == nil {
		return fuse.Status(syscall.ESTALE)
	}
	return status(s.permission(&in.InHeader, n, kernfsim.Access(in.Mask&7)))
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

// The namespace operations. Sysfs lets user space create, link, rename
// and remove nothing. Each first checks what the VFS checks before it asks
// a filesystem (may_create, may_delete: EEXIST, ENOENT, and EACCES without
// write and search permission on the directory; under default_permissions
// the kernel has checked permission, so the tree checks as root), then
// answers what Linux answers for sysfs. Its kernfs directories have
// ->mkdir, ->rmdir and ->rename, which refuse (sysfs has no
// kernfs_syscall_ops: EPERM; EINVAL for rename flags), and no ->create,
// ->mknod, ->symlink, ->link or ->unlink, for which the VFS answers EACCES
// (creating a regular file) or EPERM.

// Mkdir is MKDIR: kernfs_iop_mkdir without syscall ops.
func (s *Server) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, _ *fuse.EntryOut) fuse.Status {
	return s.refuseCreate(&in.InHeader, name, syscall.EPERM)
}

// Mknod is MKNOD: vfs_create without ->create for a regular file (also
// the kernel's fallback for an O_CREAT open), else vfs_mknod without
// ->mknod.
func (s *Server) Mknod(_ <-chan struct{}, in *fuse.MknodIn, name string, _ *fuse.EntryOut) fuse.Status {
	refusal := syscall.EPERM
	if in.Mode&syscall.S_IFMT == syscall.S_IFREG {
		refusal = syscall.EACCES
	}
	return s.refuseCreate(&in.InHeader, name, refusal)
}

// Create is CREATE, an O_CREAT open of a name the kernel found missing:
// lookup_open without ->create, EACCES. If the name has appeared since,
// the answer is the same, not EEXIST, which only O_EXCL may get.
func (s *Server) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, _ *fuse.CreateOut) fuse.Status {
	if st := s.refuseCreate(&in.InHeader, name, syscall.EACCES); st != fuse.Status(syscall.EEXIST) {
		return st
	}
	return fuse.EACCES
}

// Tmpfile is TMPFILE, an O_TMPFILE open: vfs_tmpfile checks write and
// search permission on the directory, then has no ->tmpfile
// (EOPNOTSUPP). Not ENOSYS: the kernel would stop asking and answer
// EOPNOTSUPP itself, before the permission check.
func (s *Server) Tmpfile(_ <-chan struct{}, in *fuse.CreateIn, _ *fuse.CreateOut) fuse.Status {
	dir := s.node(in.NodeId)
	if dir == nil {
		return fuse.Status(syscall.ESTALE)
	}
	err := s.dirCheck(&in.InHeader, dir, func(c kernfsim.Cred) error { return s.tree.Permission(dir, kernfsim.MayWrite|kernfsim.MayExec, c) })
	if err != nil {
		return status(err)
	}
	return fuse.Status(syscall.EOPNOTSUPP)
}

// Symlink is SYMLINK: vfs_symlink without ->symlink.
func (s *Server) Symlink(_ <-chan struct{}, h *fuse.InHeader, _, name string, _ *fuse.EntryOut) fuse.Status {
	return s.refuseCreate(h, name, syscall.EPERM)
}

// Link is LINK: may_linkat (which the kernel leaves to the server
// without default_permissions), then vfs_link without ->link.
func (s *Server) Link(_ <-chan struct{}, in *fuse.LinkIn, name string, _ *fuse.EntryOut) fuse.Status {
	if s.opts.Permissions == PermServer {
		src := s.node(in.Oldnodeid)
		if src == nil {
			return fuse.Status(syscall.ESTALE)
		}
		if err := withGroups(&in.InHeader, func(c kernfsim.Cred) error { return s.tree.MayLink(src, c) }); err != nil {
			return status(err)
		}
	}
	return s.refuseCreate(&in.InHeader, name, syscall.EPERM)
}

// Unlink is UNLINK: vfs_unlink without ->unlink.
func (s *Server) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return s.refuseDelete(h, name, syscall.EPERM)
}

// Rmdir is RMDIR: kernfs_iop_rmdir without syscall ops.
func (s *Server) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return s.refuseDelete(h, name, syscall.EPERM)
}

// Rename is RENAME and RENAME2: vfs_rename's may_delete of the old name
// and may_create (or may_delete, if it exists) of the new one, then
// kernfs_iop_rename, which refuses flags with EINVAL and the rest with
// EPERM.
func (s *Server) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	h := &in.InHeader
	olddir, newdir := s.node(in.NodeId), s.node(in.Newdir)
	if olddir == nil || newdir == nil {
		return fuse.Status(syscall.ESTALE)
	}
	if err := s.dirCheck(h, olddir, func(c kernfsim.Cred) error { return s.tree.MayDelete(olddir, oldName, c) }); err != nil {
		return status(err)
	}
	err := s.dirCheck(h, newdir, func(c kernfsim.Cred) error { return s.tree.MayCreate(newdir, newName, c) })
	if kernfsim.Errno(err) == syscall.EEXIST {
		err = s.dirCheck(h, newdir, func(c kernfsim.Cred) error { return s.tree.MayDelete(newdir, newName, c) })
	}
	switch {
	case err != nil:
		return status(err)
	case in.Flags != 0:
		return fuse.EINVAL
	}
	return fuse.EPERM
}

// refuseCreate answers a request to add name to the directory h names:
// may_create's error, else refusal.
func (s *Server) refuseCreate(h *fuse.InHeader, name string, refusal syscall.Errno) fuse.Status {
	dir := s.node(h.NodeId)
	if dir == nil {
		return fuse.Status(syscall.ESTALE)
	}
	if err := s.dirCheck(h, dir, func(c kernfsim.Cred) error { return s.tree.MayCreate(dir, name, c) }); err != nil {
		return status(err)
	}
	return fuse.Status(refusal)
}

// refuseDelete answers a request to remove name from the directory h
// names: may_delete's error, else refusal.
func (s *Server) refuseDelete(h *fuse.InHeader, name string, refusal syscall.Errno) fuse.Status {
	dir := s.node(h.NodeId)
	if dir == nil {
		return fuse.Status(syscall.ESTALE)
	}
	if err := s.dirCheck(h, dir, func(c kernfsim.Cred) error { return s.tree.MayDelete(dir, name, c) }); err != nil {
		return status(err)
	}
	return fuse.Status(refusal)
}

// dirCheck is check (Tree.MayCreate or MayDelete in dir) for the caller
// of h: as root under default_permissions, else with its supplementary
// groups where they decide.
func (s *Server) dirCheck(h *fuse.InHeader, dir *kernfsim.Node, check func(kernfsim.Cred) error) error {
	if s.opts.Permissions != PermServer {
		return check(kernfsim.RootCred)
	}
	return withGroups(h, check)
}
