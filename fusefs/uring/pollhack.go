package uring

import (
	"bytes"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// PollHackName is the name go-fuse answers in the root of every mount it
// serves, whatever the file system holds: opening it and polling it makes
// the kernel send one POLL, which the server answers ENOSYS, and the
// kernel then never sends POLL on the connection again (fuse_conn's
// no_poll). The queues answer it as go-fuse's /dev/fuse loop does, so a
// prime works the same on both transports and needs nothing of the tree.
const PollHackName = ".go-fuse-epoll-hack"

// pollHackNode is go-fuse's nodeid for PollHackName.
const pollHackNode = ^uint64(0)

var pollHackBytes = []byte(PollHackName)

// cbytes is b up to its first NUL.
func cbytes(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// opPoll is FUSE_POLL.
const opPoll = 40

// pollHack reports whether in is for the poll-hack file, as go-fuse's
// handleRequest decides: any request on its nodeid, or one in the root
// whose (first) name is PollHackName.
func pollHack(in *fuse.InHeader, data []byte) bool {
	if in.NodeId == pollHackNode {
		return true
	}
	if in.NodeId != fuse.FUSE_ROOT_ID {
		return false
	}
	switch in.Opcode {
	case opLookup, opMknod, opMkdir, opUnlink, opRmdir, opCreate, opTmpfile, opLink, opSymlink,
		opRename, opRename2, opGetxattr, opSetxattr, opRemovexattr:
		return bytes.Equal(cbytes(data), pollHackBytes) // no string: every root LOOKUP asks
	}
	return false
}

// servePollHack answers a request for the poll-hack file as go-fuse's
// doPollHackLookup does: a 0644 regular file that opens, has no xattrs,
// and answers POLL with ENOSYS. Any other opcode gets ERANGE, which
// switches no kernel feature off, or ENOSYS if go-fuse has no handler
// for it.
func (h *handler) servePollHack(in *fuse.InHeader, payload []byte) (int, fuse.Status) {
	attr := fuse.Attr{Ino: pollHackNode, Mode: fuse.S_IFREG | 0o644, Nlink: 1}
	switch in.Opcode {
	case opLookup:
		return outStruct(payload, func(o *fuse.EntryOut) fuse.Status {
			o.NodeId, o.Attr = pollHackNode, attr
			return fuse.OK
		})
	case opOpen:
		return outStruct(payload, func(o *fuse.OpenOut) fuse.Status { o.Fh = pollHackNode; return fuse.OK })
	case opGetattr, opSetattr:
		return outStruct(payload, func(o *fuse.AttrOut) fuse.Status { o.Attr = attr; return fuse.OK })
	case opGetxattr:
		return 0, fuse.ENODATA
	case opPoll:
		h.polls.Add(1)
		return 0, fuse.ENOSYS
	case opAccess, opFlush, opRelease:
		return 0, fuse.OK
	}
	if unimplemented(in.Opcode) {
		return 0, fuse.ENOSYS // go-fuse looks for a handler first
	}
	return 0, fuse.ERANGE
}

// unimplemented reports whether go-fuse answers opcode op with ENOSYS
// whatever the node and the file system.
func unimplemented(op uint32) bool {
	switch op {
	case opBmap, opSetupMapping, opRemoveMapping, opSyncfs, opCopyFileRange64:
		return true
	}
	_, known := opNames[op]
	return !known
}
