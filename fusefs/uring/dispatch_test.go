package uring

import (
	"fmt"
	"io"
	"log"
	"strings"
	"testing"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// recordFS answers every RawFileSystem method with something of its own
// and records which method was called with what.
type recordFS struct {
	fuse.RawFileSystem
	calls  []string
	panics bool // every method panics
	writev bool // Writev serves WRITE (else it answers ENOSYS)
}

func newRecordFS() *recordFS { return &recordFS{RawFileSystem: fuse.NewDefaultRawFileSystem()} }

func (f *recordFS) call(format string, args ...any) {
	if f.panics {
		panic("broken file system")
	}
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func entry(o *fuse.EntryOut) fuse.Status {
	o.NodeId, o.Generation, o.EntryValid, o.Attr.Ino, o.Attr.Mode = 7, 3, 5, 7, fuse.S_IFREG|0o640
	return fuse.OK
}

func (f *recordFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, o *fuse.EntryOut) fuse.Status {
	f.call("Lookup n%d %q", h.NodeId, name)
	return entry(o)
}

func (f *recordFS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, o *fuse.AttrOut) fuse.Status {
	f.call("GetAttr n%d", in.NodeId)
	o.Attr.Ino, o.AttrValid = 9, 2
	return fuse.OK
}

func (f *recordFS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, o *fuse.AttrOut) fuse.Status {
	f.call("SetAttr n%d %d", in.NodeId, in.Size)
	o.Attr.Size = 11
	return fuse.OK
}

func (f *recordFS) Mknod(_ <-chan struct{}, in *fuse.MknodIn, name string, o *fuse.EntryOut) fuse.Status {
	f.call("Mknod %q %o", name, in.Mode)
	return entry(o)
}

func (f *recordFS) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, o *fuse.EntryOut) fuse.Status {
	f.call("Mkdir %q %o", name, in.Mode)
	return entry(o)
}

func (f *recordFS) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	f.call("Unlink %q", name)
	return fuse.OK
}

func (f *recordFS) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	f.call("Rmdir %q", name)
	return fuse.OK
}

func (f *recordFS) Rename(_ <-chan struct{}, in *fuse.RenameIn, from, to string) fuse.Status {
	f.call("Rename %q %q %d %d", from, to, in.Newdir, in.Flags)
	return fuse.OK
}

func (f *recordFS) Link(_ <-chan struct{}, in *fuse.LinkIn, name string, o *fuse.EntryOut) fuse.Status {
	f.call("Link %q %d", name, in.Oldnodeid)
	return entry(o)
}

func (f *recordFS) Symlink(_ <-chan struct{}, h *fuse.InHeader, target, name string, o *fuse.EntryOut) fuse.Status {
	f.call("Symlink %q -> %q", name, target)
	return entry(o)
}

func (f *recordFS) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	f.call("Readlink n%d", h.NodeId)
	return []byte("target"), fuse.OK
}

func (f *recordFS) Access(_ <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	f.call("Access %o", in.Mask)
	return fuse.OK
}

func (f *recordFS) GetXAttr(_ <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	f.call("GetXAttr %q %d", attr, len(dest))
	if len(dest) < 3 {
		return 3, fuse.ERANGE
	}
	return uint32(copy(dest, "abc")), fuse.OK
}

func (f *recordFS) ListXAttr(_ <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	f.call("ListXAttr %d", len(dest))
	if len(dest) < 7 {
		return 7, fuse.ERANGE
	}
	return uint32(copy(dest, "user.a\x00")), fuse.OK
}

func (f *recordFS) SetXAttr(_ <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	f.call("SetXAttr %q %q", attr, data)
	return fuse.OK
}

func (f *recordFS) RemoveXAttr(_ <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	f.call("RemoveXAttr %q", attr)
	return fuse.OK
}

func (f *recordFS) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, o *fuse.CreateOut) fuse.Status {
	f.call("Create %q %o", name, in.Mode)
	o.Fh = 4
	return entry(&o.EntryOut)
}

func (f *recordFS) Tmpfile(_ <-chan struct{}, in *fuse.CreateIn, o *fuse.CreateOut) fuse.Status {
	f.call("Tmpfile %o", in.Mode)
	o.Fh = 4
	return entry(&o.EntryOut)
}

func (f *recordFS) Open(_ <-chan struct{}, in *fuse.OpenIn, o *fuse.OpenOut) fuse.Status {
	f.call("Open %x", in.Flags)
	o.Fh, o.OpenFlags = 6, fuse.FOPEN_DIRECT_IO
	return fuse.OK
}

func (f *recordFS) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	f.call("Read %d %d", in.Offset, len(buf))
	return fuse.ReadResultData([]byte("0123456789")), fuse.OK
}

func (f *recordFS) Lseek(_ <-chan struct{}, in *fuse.LseekIn, o *fuse.LseekOut) fuse.Status {
	f.call("Lseek %d", in.Whence)
	o.Offset = 12
	return fuse.OK
}

func (f *recordFS) GetLk(_ <-chan struct{}, in *fuse.LkIn, o *fuse.LkOut) fuse.Status {
	f.call("GetLk %d", in.Owner)
	o.Lk.Pid = 13
	return fuse.OK
}

func (f *recordFS) SetLk(_ <-chan struct{}, in *fuse.LkIn) fuse.Status {
	f.call("SetLk %d", in.Owner)
	return fuse.OK
}

func (f *recordFS) SetLkw(_ <-chan struct{}, in *fuse.LkIn) fuse.Status {
	f.call("SetLkw %d", in.Owner)
	return fuse.OK
}

func (f *recordFS) Release(_ <-chan struct{}, in *fuse.ReleaseIn) { f.call("Release %d", in.Fh) }

func (f *recordFS) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	f.call("Write %d %q", in.Offset, data)
	return uint32(len(data)), fuse.OK
}

func (f *recordFS) Writev(_ <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if !f.writev {
		return 0, fuse.ENOSYS
	}
	f.call("Writev %d %q", in.Offset, data)
	return uint32(len(data[0])) - 1, fuse.OK
}

func (f *recordFS) CopyFileRange(_ <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	f.call("CopyFileRange %d", in.Len)
	return 14, fuse.OK
}

func (f *recordFS) Ioctl(_ <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, o *fuse.IoctlOut, outbuf []byte) fuse.Status {
	f.call("Ioctl %x %q %d", in.Cmd, inbuf, len(outbuf))
	o.Result = 15
	copy(outbuf, "out")
	return fuse.OK
}

func (f *recordFS) Flush(_ <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	f.call("Flush %d", in.Fh)
	return fuse.OK
}

func (f *recordFS) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	f.call("Fsync %d", in.Fh)
	return fuse.OK
}

func (f *recordFS) Fallocate(_ <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	f.call("Fallocate %d", in.Length)
	return fuse.OK
}

func (f *recordFS) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, o *fuse.OpenOut) fuse.Status {
	f.call("OpenDir %x", in.Flags)
	o.Fh = 16
	return fuse.OK
}

func (f *recordFS) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, l *fuse.DirEntryList) fuse.Status {
	f.call("ReadDir %d", in.Offset)
	l.AddDirEntry(fuse.DirEntry{Name: "a", Mode: fuse.S_IFREG, Ino: 17, Off: 1})
	return fuse.OK
}

func (f *recordFS) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, l *fuse.DirEntryList) fuse.Status {
	f.call("ReadDirPlus %d", in.Offset)
	if o := l.AddDirLookupEntry(fuse.DirEntry{Name: "b", Mode: fuse.S_IFDIR, Ino: 18, Off: 1}); o != nil {
		entry(o)
	}
	return fuse.OK
}

func (f *recordFS) ReleaseDir(in *fuse.ReleaseIn) { f.call("ReleaseDir %d", in.Fh) }

func (f *recordFS) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	f.call("FsyncDir %d", in.Fh)
	return fuse.OK
}

func (f *recordFS) StatFs(_ <-chan struct{}, h *fuse.InHeader, o *fuse.StatfsOut) fuse.Status {
	f.call("StatFs n%d", h.NodeId)
	o.Blocks = 19
	return fuse.OK
}

func (f *recordFS) Statx(_ <-chan struct{}, in *fuse.StatxIn, o *fuse.StatxOut) fuse.Status {
	f.call("Statx %x", in.SxMask)
	o.Statx.Ino = 20
	return fuse.OK
}

// request is one request as the kernel sends it: the opcode's in-struct
// (its size, and what to set in it) and the payload after it.
type request struct {
	inSize  uintptr
	fill    func(unsafe.Pointer)
	payload string
}

// withSize sets fields of the in-struct, as a T.
func withSize[T any](set func(*T)) func(unsafe.Pointer) {
	return func(p unsafe.Pointer) { set((*T)(p)) }
}

var (
	readIn  = withSize(func(r *fuse.ReadIn) { r.Size, r.Offset = 4096, 1 })
	hdr     = unsafe.Sizeof(fuse.InHeader{})
	nothing = func(unsafe.Pointer) {}
)

// requests are the requests the kernel sends on a ring, by opcode, with
// go-fuse's in-struct sizes (RENAME and SETXATTR as for a kernel without
// the extended structs).
var requests = map[uint32][]request{
	opLookup:        {{hdr, nothing, "name\x00"}},
	opGetattr:       {{unsafe.Sizeof(fuse.GetAttrIn{}), nothing, ""}},
	opSetattr:       {{unsafe.Sizeof(fuse.SetAttrIn{}), withSize(func(s *fuse.SetAttrIn) { s.Valid, s.Size = fuse.FATTR_SIZE, 5 }), ""}},
	opReadlink:      {{hdr, nothing, ""}},
	opSymlink:       {{hdr, nothing, "link\x00target\x00"}, {hdr, nothing, "unterminated"}},
	opMknod:         {{unsafe.Sizeof(fuse.MknodIn{}), withSize(func(m *fuse.MknodIn) { m.Mode = 0o644 }), "node\x00"}},
	opMkdir:         {{unsafe.Sizeof(fuse.MkdirIn{}), withSize(func(m *fuse.MkdirIn) { m.Mode = 0o755 }), "dir\x00"}},
	opUnlink:        {{hdr, nothing, "gone\x00"}},
	opRmdir:         {{hdr, nothing, "gone\x00"}},
	opRename:        {{hdr + 8, withSize(func(r *fuse.RenameIn) { r.Newdir = 3 }), "from\x00to\x00"}},
	opLink:          {{unsafe.Sizeof(fuse.LinkIn{}), withSize(func(l *fuse.LinkIn) { l.Oldnodeid = 8 }), "link\x00"}},
	opOpen:          {{unsafe.Sizeof(fuse.OpenIn{}), withSize(func(o *fuse.OpenIn) { o.Flags = 2 }), ""}},
	opRead:          {{unsafe.Sizeof(fuse.ReadIn{}), readIn, ""}},
	opWrite:         {{unsafe.Sizeof(fuse.WriteIn{}), withSize(func(w *fuse.WriteIn) { w.Size, w.Offset = 5, 2 }), "hello"}},
	opStatfs:        {{hdr, nothing, ""}},
	opRelease:       {{unsafe.Sizeof(fuse.ReleaseIn{}), withSize(func(r *fuse.ReleaseIn) { r.Fh = 21 }), ""}},
	opFsync:         {{unsafe.Sizeof(fuse.FsyncIn{}), nothing, ""}},
	opSetxattr:      {{hdr + 8, nothing, "user.x\x00value"}, {hdr + 8, nothing, "unterminated"}},
	opGetxattr:      getxattrs("user.x\x00"),
	opListxattr:     getxattrs(""),
	opRemovexattr:   {{hdr, nothing, "user.x\x00"}},
	opFlush:         {{unsafe.Sizeof(fuse.FlushIn{}), nothing, ""}},
	opOpendir:       {{unsafe.Sizeof(fuse.OpenIn{}), nothing, ""}},
	opReaddir:       {{unsafe.Sizeof(fuse.ReadIn{}), readIn, ""}},
	opReleasedir:    {{unsafe.Sizeof(fuse.ReleaseIn{}), nothing, ""}},
	opFsyncdir:      {{unsafe.Sizeof(fuse.FsyncIn{}), nothing, ""}},
	opGetlk:         {{unsafe.Sizeof(fuse.LkIn{}), withSize(func(l *fuse.LkIn) { l.Owner = 22 }), ""}},
	opSetlk:         {{unsafe.Sizeof(fuse.LkIn{}), nothing, ""}},
	opSetlkw:        {{unsafe.Sizeof(fuse.LkIn{}), nothing, ""}},
	opAccess:        {{unsafe.Sizeof(fuse.AccessIn{}), withSize(func(a *fuse.AccessIn) { a.Mask = 4 }), ""}},
	opCreate:        {{unsafe.Sizeof(fuse.CreateIn{}), withSize(func(c *fuse.CreateIn) { c.Mode = 0o600 }), "new\x00"}},
	opIoctl:         {{unsafe.Sizeof(fuse.IoctlIn{}), withSize(func(i *fuse.IoctlIn) { i.Cmd, i.InSize, i.OutSize = 0x42, 4, 16 }), "data"}},
	opFallocate:     {{unsafe.Sizeof(fuse.FallocateIn{}), nothing, ""}},
	opReaddirplus:   {{unsafe.Sizeof(fuse.ReadIn{}), readIn, ""}},
	opRename2:       {{unsafe.Sizeof(fuse.RenameIn{}), withSize(func(r *fuse.RenameIn) { r.Newdir, r.Flags = 3, 1 }), "from\x00to\x00"}},
	opLseek:         {{unsafe.Sizeof(fuse.LseekIn{}), nothing, ""}},
	opCopyFileRange: {{unsafe.Sizeof(fuse.CopyFileRangeIn{}), nothing, ""}},
	opTmpfile:       {{unsafe.Sizeof(fuse.CreateIn{}), nothing, "/\x00"}},
	opStatx:         {{unsafe.Sizeof(fuse.StatxIn{}), nothing, ""}},
}

func getxattrs(name string) []request {
	size := func(n uint32) func(unsafe.Pointer) {
		return withSize(func(g *fuse.GetXAttrIn) { g.Size = n })
	}
	sz := unsafe.Sizeof(fuse.GetXAttrIn{})
	return []request{{sz, size(0), name}, {sz, size(64), name}, {sz, size(2), name}}
}

// onDevFuseOnly are the opcodes that never reach a ring: the kernel sends them
// on /dev/fuse, where go-fuse serves them.
var onDevFuseOnly = map[uint32]bool{26: true /* INIT */, 2: true /* FORGET */, 42: true /* BATCH_FORGET */, 36: true /* INTERRUPT */}

// TestDispatchMatchesGoFuse sends every opcode below 110 (all go-fuse
// knows, and some it does not) to the queues' dispatcher and to go-fuse's
// own decoder (fuse.ProtocolServer, which serves virtiofs): each must
// call the same method with the same arguments and reply the same bytes,
// for a plain node, the root, the poll-hack file, with DisableXAttrs,
// IgnoreSecurityLabels, a Writev, and a panicking file system. So every
// opcode go-fuse serves is served, as go-fuse serves it.
func TestDispatchMatchesGoFuse(t *testing.T) {
	variants := []struct {
		name string
		node uint64
		opts fuse.MountOptions
		fs   func(*recordFS)
		data func(string) string
	}{
		{name: "plain", node: 5},
		{name: "root", node: fuse.FUSE_ROOT_ID},
		{name: "pollhack-node", node: pollHackNode},
		{name: "pollhack-name", node: fuse.FUSE_ROOT_ID, data: func(p string) string {
			if p == "" {
				return ""
			}
			return PollHackName + "\x00" + p
		}},
		{name: "noxattr", node: 5, opts: fuse.MountOptions{DisableXAttrs: true}},
		{name: "labels", node: 5, opts: fuse.MountOptions{IgnoreSecurityLabels: true},
			data: func(p string) string { return strings.Replace(p, "user.x", "security.capability", 1) }},
		{name: "writev", node: 5, fs: func(f *recordFS) { f.writev = true }},
		{name: "panic", node: 5, fs: func(f *recordFS) { f.panics = true }},
		{name: "panic-handler", node: 5, fs: func(f *recordFS) { f.panics = true },
			opts: fuse.MountOptions{PanicHandler: func(any) fuse.Status { return fuse.Status(77) }}},
	}
	for _, v := range variants {
		t.Run("case="+v.name, func(t *testing.T) {
			for op := uint32(0); op < 110; op++ {
				if onDevFuseOnly[op] {
					continue
				}
				reqs, ok := requests[op]
				if !ok {
					reqs = []request{{hdr + 64, nothing, ""}}
				}
				for i, r := range reqs {
					if v.data != nil {
						r.payload = v.data(r.payload)
					}
					want, got := serveBoth(t, op, v.node, r, v.opts, v.fs)
					if want != got {
						t.Errorf("%s (%d) #%d on n%d:\ngo-fuse: %s\nqueues:  %s", opName(op), op, i, v.node, want, got)
					}
				}
			}
		})
	}
}

// serveBoth serves r with go-fuse's decoder and with the queues'
// dispatcher, each on a fresh recordFS, and describes what each did.
func serveBoth(t *testing.T, op uint32, node uint64, r request, opts fuse.MountOptions, set func(*recordFS)) (goFuse, queues string) {
	t.Helper()
	opts.Logger = log.New(io.Discard, "", 0)
	if opts.PanicHandler == nil {
		opts.PanicHandler = func(any) fuse.Status { return fuse.EIO }
	}
	in := make([]byte, 256)
	h := (*fuse.InHeader)(unsafe.Pointer(&in[0]))
	*h = fuse.InHeader{Length: uint32(int(r.inSize) + len(r.payload)), Opcode: op, Unique: 2, NodeId: node}
	h.Caller = fuse.Caller{Owner: fuse.Owner{Uid: 1, Gid: 2}, Pid: 3}
	r.fill(unsafe.Pointer(h))

	fs := newRecordFS()
	if set != nil {
		set(fs)
	}
	ps := fuse.NewProtocolServer(fs, &opts)
	out := make([]byte, 1<<16)
	wire := append(append([]byte(nil), in[:r.inSize]...), r.payload...)
	n, st := ps.HandleRequest([][]byte{wire}, [][]byte{out})
	goFuse = describe(fs.calls, st, out[:n], n == 0)

	fs = newRecordFS()
	if set != nil {
		set(fs)
	}
	hd := newHandler(fs, &opts)
	payload := make([]byte, minPayload)
	copy(payload, r.payload)
	var sc scratch
	rn, rst := hd.dispatch(h, nil, payload, len(r.payload), &sc)
	if rst != fuse.OK {
		rn = 0
	}
	reply := make([]byte, outHeaderSize+rn)
	*(*fuse.OutHeader)(unsafe.Pointer(&reply[0])) = fuse.OutHeader{Length: uint32(len(reply)), Status: -int32(rst), Unique: 2}
	copy(reply[outHeaderSize:], payload[:rn])
	noReply := op == opNotifyReply // go-fuse sends none; a ring entry is committed anyway
	return goFuse, describe(fs.calls, fuse.OK, reply, noReply)
}

func describe(calls []string, st fuse.Status, reply []byte, noReply bool) string {
	if noReply {
		return fmt.Sprintf("calls %q, no reply", calls)
	}
	return fmt.Sprintf("calls %q, %v, reply % x", calls, st, reply)
}

// quietFS answers the hot opcodes without allocating.
type quietFS struct {
	fuse.RawFileSystem
	rr fuse.ReadResult
}

func (quietFS) GetAttr(_ <-chan struct{}, _ *fuse.GetAttrIn, o *fuse.AttrOut) fuse.Status {
	o.Ino = 1
	return fuse.OK
}

func (quietFS) Write(_ <-chan struct{}, _ *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	return uint32(len(data)), fuse.OK
}

func (f quietFS) Read(_ <-chan struct{}, _ *fuse.ReadIn, _ []byte) (fuse.ReadResult, fuse.Status) {
	return f.rr, fuse.OK
}

func (quietFS) ReadDir(_ <-chan struct{}, _ *fuse.ReadIn, l *fuse.DirEntryList) fuse.Status {
	return fuse.OK
}

// TestDispatchAllocatesNothing checks that the dispatcher allocates
// nothing for GETATTR, READ, READDIR and WRITE (after the first WRITE,
// which learns that the file system has no Writev).
func TestDispatchAllocatesNothing(t *testing.T) {
	fs := quietFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), rr: fuse.ReadResultData([]byte("x"))}
	h := newHandler(fs, &fuse.MountOptions{Logger: log.New(io.Discard, "", 0)})
	payload := make([]byte, minPayload)
	var sc scratch
	for _, op := range []uint32{opGetattr, opRead, opReaddir, opWrite} {
		r := requests[op][0]
		in := make([]byte, 256)
		hd := (*fuse.InHeader)(unsafe.Pointer(&in[0]))
		*hd = fuse.InHeader{Opcode: op, NodeId: 5, Unique: 2}
		r.fill(unsafe.Pointer(hd))
		h.dispatch(hd, nil, payload, len(r.payload), &sc)
		if n := testing.AllocsPerRun(100, func() { h.dispatch(hd, nil, payload, len(r.payload), &sc) }); n != 0 {
			t.Errorf("%s: %v allocations per request, want 0", opName(op), n)
		}
	}
}
