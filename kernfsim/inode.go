package kernfsim

import (
	"errors"
	"io/fs"
	"slices"
	"syscall"
	"time"
)

// PageSize is the size sysfs reports for every attribute and the most one
// show or store handles.
const PageSize = 4096

// Attr is a node's inode attributes. A published Attr is immutable: Setattr
// publishes a new one, so readers never see a half-changed mode/owner pair.
// Nodes built from one template share one Attr.
type Attr struct {
	Mode  fs.FileMode // permission bits (e.g. 0444) and ModeSetuid, ModeSetgid, ModeSticky; the type comes from Kind
	Uid   uint32
	Gid   uint32
	Mtime time.Time
	Ctime time.Time
}

// Stat is what Getattr returns: a copy of the attributes plus what is
// derived from the node.
type Stat struct {
	Attr
	Ino   uint64
	Kind  Kind
	Size  int64  // PageSize for attributes (as sysfs), len(target) for symlinks, 0 for dirs
	Nlink uint32 // 2 + subdirectories for dirs, 1 otherwise
}

// FileMode is the stat's mode with its type bits.
func (s Stat) FileMode() fs.FileMode {
	switch s.Kind {
	case KindDir:
		return s.Mode | fs.ModeDir
	case KindSymlink:
		return s.Mode | fs.ModeSymlink
	}
	return s.Mode
}

// Cred is a caller's identity for permission checks.
type Cred struct {
	Uid    uint32
	Gid    uint32
	Groups []uint32 // supplementary groups

	// GroupsUnread says Groups was not read (a FUSE request carries a
	// caller's uid and gid alone). A check whose answer depends on whether
	// the caller is in the node's group through a supplementary group then
	// fails with ErrGroupsNeeded, and nothing else; WithGroups reads them
	// and asks again.
	GroupsUnread bool
}

// ErrGroupsNeeded is the errno of a check for a Cred with GroupsUnread
// whose answer depends on its supplementary groups. It never reaches a
// caller of the kernel: WithGroups turns it into the real answer, or into
// EACCES where the groups cannot be read.
const ErrGroupsNeeded syscall.Errno = 0x10000

// WithGroups runs check for c, first as it is; only where the answer
// depends on c's supplementary groups (ErrGroupsNeeded) does it read them
// with groups and run check again with them. Where they cannot be read
// the answer is EACCES: the check fails closed, as it would for a caller
// in the group whose group class refuses. This is how a server that learns
// groups on demand still decides exactly as generic_permission
// (TestPermissionTable).
func WithGroups(c Cred, groups func() ([]uint32, bool), check func(Cred) error) error {
	err := check(c)
	if !errors.Is(err, ErrGroupsNeeded) {
		return err
	}
	gs, ok := groups()
	if !ok {
		return replaceErrno(err, syscall.EACCES)
	}
	c.Groups, c.GroupsUnread = gs, false
	return check(c)
}

// replaceErrno is err with its errno replaced by e, keeping its op and path.
func replaceErrno(err error, e syscall.Errno) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: e}
	}
	return e
}

// RootCred is uid 0, which bypasses read/write checks as in the kernel.
var RootCred = Cred{}

// Access is a permission mask, as the kernel's MAY_* bits.
type Access uint8

const (
	MayExec  Access = 1
	MayWrite Access = 2
	MayRead  Access = 4
)

// ModeSpecial are the mode bits besides the permission bits that chmod
// sets and kernfs keeps (__kernfs_setattr stores the whole ia_mode).
const ModeSpecial = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// inGroup is in_group_p: gid is c's primary or a supplementary group.
// Preconditions: c's groups were read (or gid is its primary group).
func (c Cred) inGroup(gid uint32) bool {
	return c.Gid == gid || slices.Contains(c.Groups, gid)
}

// permitted is generic_permission (fs/namei.c): acl_permission_check on
// a's mode, then root's override (read and write always; exec only if
// some exec bit is set or the node is a directory). It answers 0, EACCES,
// or ErrGroupsNeeded where c.GroupsUnread and the answer depends on them.
// Root is decided first: acl_permission_check cannot refuse what the
// override grants, nor grant an exec the override refuses (that needs an
// exec bit).
func permitted(a *Attr, isDir bool, mask Access, c Cred) syscall.Errno {
	if c.Uid == 0 {
		if mask&MayExec == 0 || isDir || a.Mode&0o111 != 0 {
			return 0
		}
		return syscall.EACCES
	}
	return aclPermissionCheck(a, mask, c)
}

// aclPermissionCheck is fs/namei.c's acl_permission_check without ACLs:
// the owner triplet for the owner; else the group triplet if mask's bits
// differ between the group and other triplets and c is in a's group (only
// then is membership asked, as the kernel asks in_group_p only then), else
// the other triplet.
func aclPermissionCheck(a *Attr, mask Access, c Cred) syscall.Errno {
	mode := uint32(a.Mode.Perm())
	m := uint32(mask) & 7
	switch {
	case c.Uid == a.Uid:
		mode >>= 6
	case m&(mode^mode>>3) == 0:
	case c.Gid == a.Gid:
		mode >>= 3
	case c.GroupsUnread:
		return ErrGroupsNeeded
	case slices.Contains(c.Groups, a.Gid):
		mode >>= 3
	}
	if m&^mode != 0 {
		return syscall.EACCES
	}
	return 0
}

// stickyRefuses is check_sticky: in a sticky directory only root and the
// owners of the directory or of the victim may remove or rename it.
func stickyRefuses(dir, victim *Attr, c Cred) bool {
	return dir.Mode&fs.ModeSticky != 0 && c.Uid != 0 && c.Uid != dir.Uid && c.Uid != victim.Uid
}

// SetattrValid says which fields of a Setattr request apply.
type SetattrValid uint8

const (
	SetMode SetattrValid = 1 << iota
	SetUid
	SetGid
	SetSize
	SetMtime
)

// SetattrArgs is a setattr request: the fields named by Valid.
type SetattrArgs struct {
	Valid SetattrValid
	Mode  fs.FileMode
	Uid   uint32
	Gid   uint32
	Size  int64
	Mtime time.Time
}

// setattrPrepare is the kernel's setattr_prepare for a kernfs node: chown
// and chgrp are root's, chmod and times the owner's or root's; truncation
// needs write permission and a writable attribute (sysfs ignores the size).
// Like setattr_prepare it edits the request: a chmod by a caller outside
// the file's (new) group who is not root loses the setgid bit.
func setattrPrepare(n *Node, a *Attr, args *SetattrArgs, c Cred) syscall.Errno {
	owner := c.Uid == 0 || c.Uid == a.Uid
	switch {
	case args.Valid&(SetUid|SetGid) != 0 && c.Uid != 0:
		return syscall.EPERM
	case args.Valid&(SetMode|SetMtime) != 0 && !owner:
		return syscall.EPERM
	case args.Valid&SetMode != 0 && args.Mode&^(fs.ModePerm|ModeSpecial) != 0:
		return syscall.EINVAL
	case args.Valid&SetSize != 0 && n.kind == KindDir:
		return syscall.EISDIR
	case args.Valid&SetSize != 0 && n.kind != KindAttr:
		return syscall.EINVAL
	}
	if args.Valid&SetSize != 0 {
		if e := permitted(a, false, MayWrite, c); e != 0 {
			return e
		}
	}
	if setgidNeedsGroups(a, *args, c) {
		if c.GroupsUnread {
			return ErrGroupsNeeded
		}
		if !c.inGroup(args.newGid(a)) {
			args.Mode &^= fs.ModeSetgid
		}
	}
	return 0
}

// newGid is the group a has once args apply.
func (args *SetattrArgs) newGid(a *Attr) uint32 {
	if args.Valid&SetGid != 0 {
		return args.Gid
	}
	return a.Gid
}

// setgidNeedsGroups reports whether applying args for c depends on its
// supplementary groups: a chmod to a setgid mode by a caller who is not
// root, outside a's (new) group by its primary gid.
func setgidNeedsGroups(a *Attr, args SetattrArgs, c Cred) bool {
	if args.Valid&SetMode == 0 || args.Mode&fs.ModeSetgid == 0 || c.Uid == 0 {
		return false
	}
	return c.Gid != args.newGid(a)
}

// applySetattr returns a new Attr: a with args applied and ctime now.
func applySetattr(a *Attr, args SetattrArgs, now time.Time) *Attr {
	na := *a
	if args.Valid&SetMode != 0 {
		na.Mode = args.Mode
	}
	if args.Valid&SetUid != 0 {
		na.Uid = args.Uid
	}
	if args.Valid&SetGid != 0 {
		na.Gid = args.Gid
	}
	if args.Valid&SetMtime != 0 {
		na.Mtime = args.Mtime
	}
	na.Ctime = now
	return &na
}
