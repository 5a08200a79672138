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
	Mode  fs.FileMode // permission bits only (e.g. 0444); the type comes from Kind
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
	case c.Gid == a.Gid || slices.Contains(c.Groups, a.Gid):
		perm = a.Mode >> 3
	default:
		perm = a.Mode
	}
	return Access(perm&7)&mask == mask
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
func setattrPrepare(n *Node, a *Attr, args SetattrArgs, c Cred) syscall.Errno {
	owner := c.Uid == 0 || c.Uid == a.Uid
	switch {
	case args.Valid&(SetUid|SetGid) != 0 && c.Uid != 0:
		return syscall.EPERM
	case args.Valid&(SetMode|SetMtime) != 0 && !owner:
		return syscall.EPERM
	case args.Valid&SetMode != 0 && args.Mode&^fs.ModePerm != 0:
		return syscall.EINVAL
	case args.Valid&SetSize != 0 && n.kind == KindDir:
		return syscall.EISDIR
	case args.Valid&SetSize != 0 && n.kind != KindAttr:
		return syscall.EINVAL
	case args.Valid&SetSize != 0 && !permitted(a, false, MayWrite, c):
		return syscall.EACCES
	}
	return 0
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
