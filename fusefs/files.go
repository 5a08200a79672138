package fusefs

import (
	"io"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// Open is OPEN: kernfs_fop_open. The file reads a show() snapshot per
// open (seq_file), so it is opened FOPEN_DIRECT_IO (no page cache) and
// FOPEN_NOFLUSH (no FLUSH on close). Under default_permissions the kernel
// has checked the caller already; the tree checks again for the server
// mode and refuses writes to attributes without a store in both.
func (s *Server) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	s.stats.count(opOpen)
	n := s.node(in.NodeId)
	if n == nil {
		return fuse.Status(syscall.ESTALE)
	}
	f, err := s.open(&in.InHeader, n, int(in.Flags&syscall.O_ACCMODE))
	if err != nil {
		return status(err)
	}
	out.Fh = s.handles.add(f)
	out.OpenFlags = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH
	return fuse.OK
}

// open is Tree.Open for the caller of h: as root under default_permissions
// (the kernel has checked), else with the caller's supplementary groups
// where they decide.
func (s *Server) open(h *fuse.InHeader, n *kernfsim.Node, flags int) (*kernfsim.File, error) {
	if s.opts.Permissions != PermServer {
		return s.tree.Open(n, flags, kernfsim.RootCred)
	}
	var f *kernfsim.File
	err := withGroups(h, func(c kernfsim.Cred) error {
		var err error
		f, err = s.tree.Open(n, flags, c)
		return err
	})
	return f, err
}

// Read is READ of an open attribute. A FUSE INTERRUPT for it (the client
// got a signal) closes cancel, which the attribute's Show sees as its ctx
// being done.
func (s *Server) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	s.stats.count(opRead)
	h := s.handles.get(in.Fh)
	if h == nil {
		return nil, fuse.EBADF
	}
	n, err := h.read(in.Fh, cancel, buf[:min(len(buf), int(in.Size))], int64(in.Offset))
	if err != nil && err != io.EOF {
		return nil, status(err)
	}
	r := readResults.Get().(*readResult)
	r.data = buf[:n]
	return r, fuse.OK
}

// readResult is a READ's reply: data in the transport's buffer. Both
// transports call Done once they have sent it, so results are pooled and
// a READ allocates nothing (fuse.ReadResultData allocates one per READ).
type readResult struct{ data []byte }

var readResults = sync.Pool{New: func() any { return new(readResult) }}

var _ fuse.ReadResult = (*readResult)(nil)

func (r *readResult) Bytes([]byte) ([]byte, fuse.Status) { return r.data, fuse.OK }

func (r *readResult) Size() int { return len(r.data) }

// Done gives r back to the pool; its data is the transport's again.
func (r *readResult) Done() {
	r.data = nil
	readResults.Put(r)
}

// Write is WRITE: the whole buffer goes to the attribute's store.
func (s *Server) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	s.stats.count(opWrite)
	h := s.handles.get(in.Fh)
	if h == nil {
		return 0, fuse.EBADF
	}
	n, err := h.write(in.Fh, data)
	return uint32(n), status(err)
}

// Release is RELEASE.
func (s *Server) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	s.stats.count(opRelease)
	if f := s.handles.remove(in.Fh); f != nil {
		f.Release()
	}
}

// Flush is FLUSH: nothing to flush (and FOPEN_NOFLUSH asks not to be sent).
func (s *Server) Flush(_ <-chan struct{}, _ *fuse.FlushIn) fuse.Status {
	s.stats.count(opFlush)
	return fuse.ENOSYS
}

// OpenDir is OPENDIR. Listings are stateless: READDIR resumes from the
// offset the kernel passes back, a name hash, stable while the directory
// changes.
func (s *Server) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	s.stats.count(opOpendir)
	n := s.node(in.NodeId)
	switch {
	case n == nil:
		return fuse.Status(syscall.ESTALE)
	case n.Kind() != kernfsim.KindDir:
		return fuse.ENOTDIR
	case s.opts.Permissions == PermServer:
		return status(s.permission(&in.InHeader, n, kernfsim.MayRead))
	}
	return fuse.OK
}

// ReadDir is READDIR: ".", "..", then the children in offset order.
func (s *Server) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	s.stats.count(opReaddir)
	dir := s.node(in.NodeId)
	if dir == nil {
		return fuse.Status(syscall.ESTALE)
	}
	holdIfAsked(cancel, dir)
	off := in.Offset
	dots := []fuse.DirEntry{
		{Name: ".", Mode: syscall.S_IFDIR, Ino: dir.Ino(), Off: 1},
		{Name: "..", Mode: syscall.S_IFDIR, Ino: parentIno(dir), Off: 2},
	}
	for _, d := range dots[min(off, 2):] {
		if !out.AddDirEntry(d) {
			return fuse.OK
		}
	}
	err := s.tree.Readdir(dir, max(off, 2), func(e kernfsim.Dirent) bool {
		return out.AddDirEntry(fuse.DirEntry{Name: e.Name, Ino: e.Ino, Mode: typeBits(e.Kind), Off: e.Off})
	})
	return status(err)
}

// ReleaseDir is RELEASEDIR: listings hold no state.
func (s *Server) ReleaseDir(_ *fuse.ReleaseIn) { s.stats.count(opReleasedir) }

func parentIno(n *kernfsim.Node) uint64 {
	if p := n.Parent(); p != nil {
		return p.Ino()
	}
	return n.Ino()
}

func typeBits(k kernfsim.Kind) uint32 {
	switch k {
	case kernfsim.KindDir:
		return syscall.S_IFDIR
	case kernfsim.KindSymlink:
		return syscall.S_IFLNK
	}
	return syscall.S_IFREG
}
