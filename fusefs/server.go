// Package fusefs serves a kernfsim tree over FUSE with go-fuse's raw API
// (fuse.RawFileSystem), so that no go-fuse lock sits on the lookup,
// getattr or read path and the tree's lock strategy is the only
// synchronisation between requests. It owns nodeid and lookup-count
// bookkeeping, file handles, errno mapping (status, once), kernel cache
// invalidation and mounting.
//
// Lock ordering (outer to inner):
//
//	tree read side (Strategy.RLock), per request, via the tree's methods;
//	where reads are not scoped also around nodeid resolution (Server.node)
//	  handle.mu (one open file; serialises READs of one descriptor)
//	handleTable free-list mutexes (OPEN/RELEASE, 1 of 16 shards)
//	table.grow (only when a chunk of nodeids or handles is added, or an
//	emptied chunk of nodeids is released)
//
// No lock is held while calling the tree's writers or go-fuse's notify
// functions. Kernel notifications run in the tree writer's goroutine after
// the writer has released the tree lock (Tree.Subscribe).
package fusefs

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// Permissions says who checks permissions.
type Permissions string

const (
	// PermKernel mounts with default_permissions: the kernel checks modes
	// from GETATTR replies (one GETATTR per directory on a path walk, the
	// kernfs ->permission() refresh).
	PermKernel Permissions = "kernel"
	// PermServer leaves checks to LOOKUP (exec on the directory), ACCESS and
	// OPEN: fewer round trips.
	PermServer Permissions = "server"
)

// Options configure a Server.
type Options struct {
	EntryTimeout    time.Duration // how long the kernel may cache a positive entry (0: revalidate every time)
	AttrTimeout     time.Duration // how long the kernel may cache attributes
	NegativeTimeout time.Duration // how long the kernel may cache a missing name (0: never)
	Permissions     Permissions   // "" means PermServer
}

// Server is a fuse.RawFileSystem serving one tree.
type Server struct {
	fuse.RawFileSystem // ENOSYS for what a sysfs does not do

	tree    *kernfsim.Tree   // immutable
	opts    Options          // immutable
	reads   locking.ReadSide // immutable: nodeids resolve under the read side unless reads are scoped
	nodes   nodeTable
	handles handleTable
	stats   *Stats // immutable pointer

	fuse        atomic.Pointer[fuse.Server] // set by Init
	unsubscribe func()                      // immutable
	transport   atomic.Pointer[transportInfo]
}

// transportInfo is what the stats file says of the transport.
type transportInfo struct {
	name        Transport
	ring        *uring.Transport // nil on /dev/fuse
	primedPolls atomic.Uint64    // ring.Polls() once the POLL prime was answered
}

func (s *Server) setTransport(name Transport, ring *uring.Transport) {
	s.transport.Store(&transportInfo{name: name, ring: ring})
}

var _ fuse.RawFileSystem = (*Server)(nil)

// NewServer returns a server for tree. It subscribes to the tree's changes
// to keep kernel caches truthful; Close unsubscribes.
func NewServer(tree *kernfsim.Tree, opts Options) *Server {
	if opts.Permissions == "" {
		opts.Permissions = PermServer
	}
	s := &Server{
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		tree:          tree,
		opts:          opts,
		reads:         locking.ReadSideOf(tree.Strategy()),
		stats:         newStats(),
	}
	s.nodes.t.release = true // nodeids are never reused
	s.nodes.pin(tree.Root())
	s.unsubscribe = tree.Subscribe(s.invalidate)
	return s
}

// Close stops kernel notifications.
func (s *Server) Close() { s.unsubscribe() }

func (s *Server) String() string { return "kernfsim" }

// Init keeps the go-fuse server for notifications.
func (s *Server) Init(fs *fuse.Server) { s.fuse.Store(fs) }

// Nodeids is the size of the nodeid table: the root plus every node the
// kernel has looked up and not forgotten.
func (s *Server) Nodeids() int64 { return s.nodes.len() }

// OpenFiles is the number of open file handles.
func (s *Server) OpenFiles() int64 { return s.handles.count.Load() }

// node resolves a nodeid: under the strategy's read side where reads
// are not scoped (mutex, rwsem), without any lock where they are (rcu,
// none: the table is published for lock-free readers).
func (s *Server) node(nodeid uint64) *kernfsim.Node {
	r := s.reads.EnterCall()
	n := s.nodes.get(nodeid)
	s.reads.ExitCall(r)
	return n
}

func cred(h *fuse.InHeader) kernfsim.Cred {
	return kernfsim.Cred{Uid: h.Uid, Gid: h.Gid}
}

// fillAttr converts a kernfsim stat to FUSE attributes.
func fillAttr(out *fuse.Attr, st kernfsim.Stat) {
	mode := uint32(st.Mode)
	switch st.Kind {
	case kernfsim.KindDir:
		mode |= syscall.S_IFDIR
	case kernfsim.KindSymlink:
		mode |= syscall.S_IFLNK
	default:
		mode |= syscall.S_IFREG
	}
	*out = fuse.Attr{
		Ino: st.Ino, Size: uint64(st.Size), Mode: mode, Nlink: st.Nlink,
		Owner: fuse.Owner{Uid: st.Uid, Gid: st.Gid}, Blksize: kernfsim.PageSize,
	}
	out.SetTimes(&st.Mtime, &st.Mtime, &st.Ctime)
}
