package uring

import (
	"fmt"
	"log"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// opNames names the opcodes a ring carries, for the debug log.
var opNames = map[uint32]string{
	opLookup: "LOOKUP", opGetattr: "GETATTR", opSetattr: "SETATTR", opReadlink: "READLINK",
	opSymlink: "SYMLINK", opMknod: "MKNOD", opMkdir: "MKDIR", opUnlink: "UNLINK", opRmdir: "RMDIR",
	opRename: "RENAME", opLink: "LINK", opOpen: "OPEN", opRead: "READ", opWrite: "WRITE",
	opStatfs: "STATFS", opRelease: "RELEASE", opFsync: "FSYNC", opSetxattr: "SETXATTR",
	opGetxattr: "GETXATTR", opListxattr: "LISTXATTR", opRemovexattr: "REMOVEXATTR",
	opFlush: "FLUSH", opOpendir: "OPENDIR", opReaddir: "READDIR", opReleasedir: "RELEASEDIR",
	opFsyncdir: "FSYNCDIR", opGetlk: "GETLK", opSetlk: "SETLK", opSetlkw: "SETLKW",
	opAccess: "ACCESS", opCreate: "CREATE", opBmap: "BMAP", opDestroy: "DESTROY", opIoctl: "IOCTL",
	opPoll: "POLL", opNotifyReply: "NOTIFY_REPLY", opFallocate: "FALLOCATE", opReaddirplus: "READDIRPLUS",
	opRename2: "RENAME2", opLseek: "LSEEK", opCopyFileRange: "COPY_FILE_RANGE",
	opSetupMapping: "SETUPMAPPING", opRemoveMapping: "REMOVEMAPPING", opSyncfs: "SYNCFS",
	opTmpfile: "TMPFILE", opStatx: "STATX", opCopyFileRange64: "COPY_FILE_RANGE_64",
}

func opName(op uint32) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("OPCODE-%d", op)
}

// named lists the opcodes whose payload starts with a name.
var named = map[uint32]bool{opLookup: true, opMknod: true, opMkdir: true, opUnlink: true, opRmdir: true,
	opCreate: true, opSymlink: true, opRename: true, opRename2: true, opLink: true, opGetxattr: true, opSetxattr: true, opRemovexattr: true, opTmpfile: true}

// logRequest logs a request as go-fuse's debug output does: unique,
// opcode, node, the name for opcodes that carry one, and the request's
// extensions (ext.go). Call it before
// dispatch: the reply overwrites the payload.
func logRequest(l *log.Logger, q int, in *fuse.InHeader, data []byte) {
	arg, _, _ := args(in, data)
	name := ""
	if named[in.Opcode] {
		name = fmt.Sprintf(" %q", cstring(arg))
	}
	l.Printf("rx %d: %s n%d%s%s %db (queue %d)", in.Unique, opName(in.Opcode), in.NodeId, name, extDebug(in, data), len(arg), q)
}

// logReply logs a reply's status and size.
func logReply(l *log.Logger, in *fuse.InHeader, st fuse.Status, n int) {
	l.Printf("tx %d:     %v, %db", in.Unique, st, n)
}
