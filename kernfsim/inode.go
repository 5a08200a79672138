package kernfsim

import (
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
func (c Cred) inGroup(gid uint32) bool {
	return c.Gid == gid || slices.Contains(c.Groups, gid)
}

// permitted is generic_permission: the owner, group or other triplet of
// mode, with root's bypass (read and write always; exec only if some exec
// bit is set or the node is a directory).
func permitted(a *Attr, isDir bool, mask Access, c Cred) bool {
	if c.Uid == 0 {
		return mask&MayExec == 0 || isDir || a.Mode&0o111 != 0
	}
	var perm fs.FileMode
	switch {
	case c.Uid == a.Uid:
		perm = a.Mode >> 6
	case c.inGroup(a.Gid):
		perm = a.Mode >> 3
	default:
		perm = a.Mode
	}
	return Access(perm&7)&mask == mask
}

// groupMayGrant reports whether a supplementary group that c does not
// carry could turn a refusal of mask on a into a grant: c is neither root
// nor a's owner, its primary group is not a's, and a's group class grants
// mask. (Where the group class grants less than the other class, a group
// could also turn a grant into a refusal; sysfs modes never do that, and
// a server that learns groups on demand does not look for it.)
func groupMayGrant(a *Attr, mask Access, c Cred) bool {
	if c.Uid == 0 || c.Uid == a.Uid || c.Gid == a.Gid {
		return false
	}
	return Access(a.Mode>>3&7)&mask == mask
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
	case args.Valid&SetSize != 0 && !permitted(a, false, MayWrite, c):
		return syscall.EACCES
	}
	if args.Valid&SetMode != 0 && c.Uid != 0 && !c.inGroup(args.newGid(a)) {
		args.Mode &^= fs.ModeSetgid
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

// setgidNeedsGroups reports whether applying args for c depends on
// supplementary groups that c does not carry: a chmod to a setgid mode by
// a caller who is not root, outside a's (new) group by its primary gid.
func setgidNeedsGroups(a *Attr, args SetattrArgs, c Cred) bool {
	if args.Valid&SetMode == 0 || args.Mode&fs.ModeSetgid == 0 || c.Uid == 0 {
		return false
	}
	return !c.inGroup(args.newGid(a))
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
