package uring

import (
	"bytes"
	"log"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// FUSE opcodes (include/uapi/linux/fuse.h) that can reach a ring: all
// but INIT, FORGET, BATCH_FORGET and INTERRUPT, which the kernel sends on
// /dev/fuse, where go-fuse serves them.
const (
	opLookup          = 1
	opGetattr         = 3
	opSetattr         = 4
	opReadlink        = 5
	opSymlink         = 6
	opMknod           = 8
	opMkdir           = 9
	opUnlink          = 10
	opRmdir           = 11
	opRename          = 12
	opLink            = 13
	opOpen            = 14
	opRead            = 15
	opWrite           = 16
	opStatfs          = 17
	opRelease         = 18
	opFsync           = 20
	opSetxattr        = 21
	opGetxattr        = 22
	opListxattr       = 23
	opRemovexattr     = 24
	opFlush           = 25
	opOpendir         = 27
	opReaddir         = 28
	opReleasedir      = 29
	opFsyncdir        = 30
	opGetlk           = 31
	opSetlk           = 32
	opSetlkw          = 33
	opAccess          = 34
	opCreate          = 35
	opBmap            = 37
	opDestroy         = 38
	opIoctl           = 39
	opNotifyReply     = 41
	opFallocate       = 43
	opReaddirplus     = 44
	opRename2         = 45
	opLseek           = 46
	opCopyFileRange   = 47
	opSetupMapping    = 48
	opRemoveMapping   = 49
	opSyncfs          = 50
	opTmpfile         = 51
	opStatx           = 52
	opCopyFileRange64 = 53
)

// scratch is an entry's Go-side working memory: the requests that need
// some use it instead of allocating. Used by whoever serves the entry.
type scratch struct {
	iov  [1][]byte         // WRITE's Writev argument
	dirs fuse.DirEntryList // READDIR's and READDIRPLUS's list
}

// handler decodes ring requests into calls of the same fuse.RawFileSystem
// methods that go-fuse's /dev/fuse loop calls (fuse/opcode.go), and
// encodes the replies into the entry's payload as go-fuse does. Out-structs
// are zeroed before the method fills them: the payload is reused and
// stale bytes would become cache timeouts. Every field is immutable once
// the queues start, but polls and noWritev (atomic).
type handler struct {
	fs           fuse.RawFileSystem
	xattrs       bool                  // false: answer ENOSYS for xattr opcodes, as go-fuse's DisableXAttrs
	ignoreLabels bool                  // go-fuse's IgnoreSecurityLabels
	polls        atomic.Uint64         // POLL requests answered, the prime's included
	noWritev     atomic.Bool           // fs.Writev answered ENOSYS: WRITE goes to fs.Write
	logger       *log.Logger           // go-fuse's MountOptions.Logger
	debug        *log.Logger           // every request and reply is logged to it; nil: none
	panicked     func(any) fuse.Status // go-fuse's MountOptions.PanicHandler, or its default
	mnt          string                // the mountpoint, for a queue's nudge (grow.go); "" for none
	nudge        func(qid int)         // sends one request on qid's CPU after it grew: statxNudge, or a test's
	retrieve     *retrieveTable        // go-fuse's waiting retrieves (retrieve.go); nil until INIT
	limit        *limiter              // MaxInflightRequestBytes and SingleThreaded (inflight.go)
}

// newHandler serves fs as go-fuse's loop would with opts, whose Logger
// is set.
func newHandler(fs fuse.RawFileSystem, opts *fuse.MountOptions) *handler {
	h := &handler{fs: fs, xattrs: !opts.DisableXAttrs, ignoreLabels: opts.IgnoreSecurityLabels,
		logger: opts.Logger, panicked: opts.PanicHandler, limit: newLimiter(opts)}
	if opts.Debug {
		h.debug = opts.Logger
	}
	if h.panicked == nil {
		h.panicked = h.logPanic
	}
	h.nudge = h.statxNudge
	return h
}

// logPanic is go-fuse's default PanicHandler: log the panic with the
// goroutine's stack and answer EIO.
func (h *handler) logPanic(r any) fuse.Status {
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	h.logger.Printf("panic in FS handler: %v\n%s", r, buf)
	return fuse.EIO
}

// dispatch serves one request and returns how many payload bytes the
// reply has; sc is the entry's scratch. A panic in the file system is
// answered as go-fuse answers it (the PanicHandler's status, EIO if that
// is OK), and the queue goes on serving.
func (h *handler) dispatch(in *fuse.InHeader, cancel <-chan struct{}, payload []byte, n int, sc *scratch) (out int, st fuse.Status) {
	defer h.limit.unlock(h.limit.lock())
	defer func() {
		if r := recover(); r != nil {
			out, st = 0, h.panicked(r)
			if st == fuse.OK {
				st = fuse.EIO
			}
		}
	}()
	op := unsafe.Pointer(in)                // the in-struct starts with the header
	data, st := h.splitExt(in, payload[:n]) // request extensions cut off (ext.go)
	if st != fuse.OK {
		return 0, st
	}
	if pollHack(in, data) {
		return h.servePollHack(in, payload)
	}
	switch in.Opcode {
	case opLookup:
		name := cstring(data) // before the reply overwrites it
		return outStruct(payload, func(o *fuse.EntryOut) fuse.Status { return h.fs.Lookup(cancel, in, name, o) })
	case opGetattr:
		return outStruct(payload, func(o *fuse.AttrOut) fuse.Status { return h.fs.GetAttr(cancel, (*fuse.GetAttrIn)(op), o) })
	case opSetattr:
		return outStruct(payload, func(o *fuse.AttrOut) fuse.Status { return h.fs.SetAttr(cancel, (*fuse.SetAttrIn)(op), o) })
	case opReadlink:
		b, st := h.fs.Readlink(cancel, in)
		return copy(payload, b), st
	case opOpen:
		return outStruct(payload, func(o *fuse.OpenOut) fuse.Status { return h.fs.Open(cancel, (*fuse.OpenIn)(op), o) })
	case opOpendir:
		return outStruct(payload, func(o *fuse.OpenOut) fuse.Status { return h.fs.OpenDir(cancel, (*fuse.OpenIn)(op), o) })
	case opRead:
		return h.read((*fuse.ReadIn)(op), cancel, payload)
	case opReaddir, opReaddirplus:
		return h.readDir(in.Opcode, (*fuse.ReadIn)(op), cancel, payload, &sc.dirs)
	case opWrite:
		w, st := h.write((*fuse.WriteIn)(op), cancel, data, &sc.iov)
		*(*fuse.WriteOut)(unsafe.Pointer(&payload[0])) = fuse.WriteOut{Size: w}
		return int(unsafe.Sizeof(fuse.WriteOut{})), st
	case opRelease:
		h.fs.Release(cancel, (*fuse.ReleaseIn)(op))
		return 0, fuse.OK
	case opReleasedir:
		h.fs.ReleaseDir((*fuse.ReleaseIn)(op))
		return 0, fuse.OK
	case opAccess:
		return 0, h.fs.Access(cancel, (*fuse.AccessIn)(op))
	case opStatfs:
		return outStruct(payload, func(o *fuse.StatfsOut) fuse.Status { return h.fs.StatFs(cancel, in, o) })
	case opFlush:
		return 0, h.fs.Flush(cancel, (*fuse.FlushIn)(op))
	}
	return h.rare(in, cancel, op, payload, data)
}

// rare serves the opcodes a sysfs sees seldom or refuses. Names are
// taken from the payload before the reply overwrites it.
func (h *handler) rare(in *fuse.InHeader, cancel <-chan struct{}, op unsafe.Pointer, payload, data []byte) (int, fuse.Status) {
	name := cstring(data)
	switch in.Opcode {
	case opMknod:
		return outStruct(payload, func(o *fuse.EntryOut) fuse.Status { return h.fs.Mknod(cancel, (*fuse.MknodIn)(op), name, o) })
	case opMkdir:
		return outStruct(payload, func(o *fuse.EntryOut) fuse.Status { return h.fs.Mkdir(cancel, (*fuse.MkdirIn)(op), name, o) })
	case opLink:
		return outStruct(payload, func(o *fuse.EntryOut) fuse.Status { return h.fs.Link(cancel, (*fuse.LinkIn)(op), name, o) })
	case opSymlink:
		name, target, ok := cstrings(data)
		if !ok {
			return 0, fuse.EIO
		}
		return outStruct(payload, func(o *fuse.EntryOut) fuse.Status { return h.fs.Symlink(cancel, in, target, name, o) })
	case opUnlink:
		return 0, h.fs.Unlink(cancel, in, name)
	case opRmdir:
		return 0, h.fs.Rmdir(cancel, in, name)
	case opRename, opRename2:
		from, to, ok := cstrings(data)
		if !ok {
			return 0, fuse.EIO
		}
		return 0, h.fs.Rename(cancel, (*fuse.RenameIn)(op), from, to)
	case opCreate:
		return outStruct(payload, func(o *fuse.CreateOut) fuse.Status { return h.fs.Create(cancel, (*fuse.CreateIn)(op), name, o) })
	case opTmpfile:
		return outStruct(payload, func(o *fuse.CreateOut) fuse.Status { return h.fs.Tmpfile(cancel, (*fuse.CreateIn)(op), o) })
	case opFsync:
		return 0, h.fs.Fsync(cancel, (*fuse.FsyncIn)(op))
	case opFsyncdir:
		return 0, h.fs.FsyncDir(cancel, (*fuse.FsyncIn)(op))
	case opGetlk:
		return outStruct(payload, func(o *fuse.LkOut) fuse.Status { return h.fs.GetLk(cancel, (*fuse.LkIn)(op), o) })
	case opSetlk:
		return 0, h.fs.SetLk(cancel, (*fuse.LkIn)(op))
	case opSetlkw:
		return 0, h.fs.SetLkw(cancel, (*fuse.LkIn)(op))
	case opFallocate:
		return 0, h.fs.Fallocate(cancel, (*fuse.FallocateIn)(op))
	case opLseek:
		return outStruct(payload, func(o *fuse.LseekOut) fuse.Status { return h.fs.Lseek(cancel, (*fuse.LseekIn)(op), o) })
	case opCopyFileRange:
		w, st := h.fs.CopyFileRange(cancel, (*fuse.CopyFileRangeIn)(op))
		*(*fuse.WriteOut)(unsafe.Pointer(&payload[0])) = fuse.WriteOut{Size: w}
		return int(unsafe.Sizeof(fuse.WriteOut{})), st
	case opStatx:
		return outStruct(payload, func(o *fuse.StatxOut) fuse.Status { return h.fs.Statx(cancel, (*fuse.StatxIn)(op), o) })
	case opGetxattr, opListxattr, opSetxattr, opRemovexattr:
		return h.xattr(in, cancel, op, payload, data)
	case opIoctl:
		return h.ioctl((*fuse.IoctlIn)(op), cancel, payload, data)
	case opDestroy:
		return 0, fuse.OK
	case opNotifyReply: // go-fuse's InodeRetrieveCache waits for it (retrieve.go)
		return h.notifyReply(in, data)
	case opPoll: // go-fuse answers ENOSYS; the fs has no say
		h.polls.Add(1)
		return 0, fuse.ENOSYS
	case opCopyFileRange64: // go-fuse leaves it out on purpose, silently
		return 0, fuse.ENOSYS
	}
	h.logger.Printf("Unimplemented opcode %v", opName(in.Opcode))
	return 0, fuse.ENOSYS
}

// write serves WRITE as go-fuse does: Writev, and Write if that answers
// ENOSYS. A file system whose Writev answered ENOSYS once is not asked
// again.
func (h *handler) write(in *fuse.WriteIn, cancel <-chan struct{}, data []byte, iov *[1][]byte) (uint32, fuse.Status) {
	if !h.noWritev.Load() {
		iov[0] = data
		w, st := h.fs.Writev(cancel, in, iov[:])
		iov[0] = nil
		if st != fuse.ENOSYS {
			return w, st
		}
		h.noWritev.Store(true)
	}
	return h.fs.Write(cancel, in, data)
}

// readDir serves READDIR and READDIRPLUS into the payload, with l as the
// list.
func (h *handler) readDir(op uint32, r *fuse.ReadIn, cancel <-chan struct{}, payload []byte, l *fuse.DirEntryList) (int, fuse.Status) {
	*l = *fuse.NewDirEntryList(payload[:min(int(r.Size), len(payload))], r.Offset) // inlined: no allocation
	var st fuse.Status
	if op == opReaddirplus {
		st = h.fs.ReadDirPlus(cancel, r, l)
	} else {
		st = h.fs.ReadDir(cancel, r, l)
	}
	return inPlace(payload, l.Bytes()), st
}

// ioctl serves IOCTL as go-fuse does: the reply is an IoctlOut followed
// by OutSize bytes. The input is copied first, since the reply is
// written over it.
func (h *handler) ioctl(in *fuse.IoctlIn, cancel <-chan struct{}, payload, data []byte) (int, fuse.Status) {
	inbuf := append([]byte(nil), data...)
	hdr := int(unsafe.Sizeof(fuse.IoctlOut{}))
	outbuf := payload[hdr : hdr+min(int(in.OutSize), len(payload)-hdr)]
	clear(outbuf)
	n, st := outStruct(payload, func(o *fuse.IoctlOut) fuse.Status { return h.fs.Ioctl(cancel, in, inbuf, o, outbuf) })
	return n + len(outbuf), st
}

// xattr serves the extended-attribute opcodes as go-fuse does.
func (h *handler) xattr(in *fuse.InHeader, cancel <-chan struct{}, op unsafe.Pointer, payload, data []byte) (int, fuse.Status) {
	if !h.xattrs {
		return 0, fuse.ENOSYS
	}
	switch in.Opcode {
	case opSetxattr:
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			return 0, fuse.EINVAL
		}
		return 0, h.fs.SetXAttr(cancel, (*fuse.SetXAttrIn)(op), string(data[:i]), data[i+1:])
	case opRemovexattr:
		return 0, h.fs.RemoveXAttr(cancel, in, cstring(data))
	}
	gin := (*fuse.GetXAttrIn)(op)
	name := cstring(data) // a copy: the value is written over it
	if in.Opcode == opGetxattr && h.ignoreLabels && securityLabel(name) {
		return 0, fuse.ENOATTR
	}
	dest := payload[:min(int(gin.Size), len(payload))]
	var sz uint32
	var st fuse.Status
	if in.Opcode == opGetxattr {
		sz, st = h.fs.GetXAttr(cancel, in, name, dest)
	} else {
		sz, st = h.fs.ListXAttr(cancel, in, dest)
	}
	if gin.Size == 0 && (st == fuse.OK || st == fuse.ERANGE) {
		*(*fuse.GetXAttrOut)(unsafe.Pointer(&payload[0])) = fuse.GetXAttrOut{Size: sz}
		return int(unsafe.Sizeof(fuse.GetXAttrOut{})), fuse.OK
	}
	if st != fuse.OK {
		return 0, st
	}
	return int(min(sz, uint32(len(dest)))), st
}

// securityLabel reports whether name is one of the attributes that
// go-fuse's IgnoreSecurityLabels answers itself.
func securityLabel(name string) bool {
	return name == "security.capability" || name == "system.posix_acl_access" || name == "system.posix_acl_default"
}

func (h *handler) read(in *fuse.ReadIn, cancel <-chan struct{}, payload []byte) (int, fuse.Status) {
	buf := payload[:min(int(in.Size), len(payload))]
	rr, st := h.fs.Read(cancel, in, buf)
	if rr == nil {
		return 0, st
	}
	defer rr.Done()
	if st != fuse.OK {
		return 0, st
	}
	b, st := rr.Bytes(buf)
	return inPlace(payload, b), st
}

// outStruct zeroes a T at the start of payload, lets fn fill it and
// returns its size.
func outStruct[T any](payload []byte, fn func(*T) fuse.Status) (int, fuse.Status) {
	o := (*T)(unsafe.Pointer(&payload[0]))
	var zero T
	*o = zero
	return int(unsafe.Sizeof(zero)), fn(o)
}

// inPlace returns len(b) after making sure b's bytes are at the start of
// payload (a ReadResult may return memory of its own).
func inPlace(payload, b []byte) int {
	if len(b) > 0 && &b[0] != &payload[0] {
		return copy(payload, b)
	}
	return len(b)
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func cstrings(b []byte) (string, string, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", "", false
	}
	j := bytes.IndexByte(b[i+1:], 0)
	if j < 0 {
		return "", "", false
	}
	return string(b[:i]), string(b[i+1 : i+1+j]), true
}
