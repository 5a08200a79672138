// Package fusefs serves a kernfsim tree over FUSE with go-fuse's raw API.
//
// It implements fuse.RawFileSystem, so no go-fuse lock sits on the
// lookup, getattr or read path. The tree's lock strategy is the only
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
//	notifier.mu (the notification queue; nothing is called under it)
//	groupCache.mu (callers' supplementary groups; nothing is called under
//	it, and /proc is read without it)
//
// No lock is held while calling the tree's writers or go-fuse's notify
// functions. Kernel notifications are sent by the Server's notifier
// goroutine, never by a thread that serves requests (notify.go): the
// writer, a tree subscriber called after it has released the tree lock
// (Tree.Subscribe), queues them and waits for them within a bound.
//
// What the kernel may cache (Options' timeouts > 0, and negative entries
// under a strategy that caches them: ResolveNegatives) stays truthful:
//
//   - Every tree change is told to the kernel after it is published, in
//     order (an add's notice never before an earlier remove of the same
//     name). Once the notifier has sent what was queued
//     (Server.NotifyBarrier), nothing cached before the change is served.
//   - A writer returns after its notices were sent, so a client whose
//     write to new_device or delete_device returned sees the change. No
//     writer runs on a thread that serves requests (over io_uring the
//     queues serve WRITE and SETATTR on goroutines of their own), so the
//     lookups a held notification waits for are served meanwhile. Only a
//     notification held for 1 s in one kernel call (5 s in all) makes the
//     writer return first, counted in NotifyStats.Unwaited; the kernel is
//     told when the notifier gets through, and a client that looks the
//     name up meanwhile may be given what the kernel cached before.
//   - Past notifyCap queued notices new ones are dropped (NotifyStats.
//     Overflows); the kernel then serves what it cached for at most the
//     mount's longest timeout, and NotifyBarrier waits that long.
package fusefs

import (
	"sync/atomic"
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
	EntryTimeout time.Duration // how long the kernel may cache a positive entry (0: revalidate every time)
	AttrTimeout  time.Duration // how long the kernel may cache attributes
	// NegativeTimeout, if set, is how long the kernel may cache a missing
	// name (0: never), whatever the strategy. Left nil, the strategy
	// decides, as each kernfs era did (ResolveNegatives).
	NegativeTimeout *time.Duration
	Permissions     Permissions // "" means PermServer
}

// NegativeUntilChanged is the entry timeout of a negative entry that the
// kernel keeps until its directory changes: every change of the name is
// told to the kernel (notify.go), so the timeout only bounds how long a
// notice lost to an overflow can leave a stale negative entry.
const NegativeUntilChanged = time.Hour

// NegativeRule is how a server answers a LOOKUP of a missing name.
type NegativeRule struct {
	// Timeout is how long the kernel keeps the negative entry; 0: the
	// reply is a plain ENOENT, which the kernel does not cache.
	Timeout time.Duration
	// FromLock: the strategy decided (Options.NegativeTimeout was nil).
	FromLock bool
}

// ResolveNegatives is the rule a server with o follows under a strategy
// with traits t. By default a strategy that CachesNegatives (kernfs from
// Linux 5.15) has the kernel keep a missing name until its directory
// changes; one that does not (mutex, kernfs up to 5.14) answers every
// missing LOOKUP afresh. Options.NegativeTimeout overrides either.
//
// What this models, and what not: kernfs revalidates a negative dentry on
// every walk, under the rwsem's read side, against its parent's revision
// (kernfs_dop_revalidate). Over FUSE the kernel keeps it alone, without
// asking the server, until it is told of a change; so a cached missing
// name costs no request at all, where kernfs still takes its read side.
func ResolveNegatives(o Options, t locking.Traits) NegativeRule {
	switch {
	case o.NegativeTimeout != nil:
		return NegativeRule{Timeout: *o.NegativeTimeout}
	case t.CachesNegatives:
		return NegativeRule{Timeout: NegativeUntilChanged, FromLock: true}
	}
	return NegativeRule{FromLock: true}
}

// String is the rule as the status line and reports give it:
// lock:cached or lock:uncached when the strategy decided, override
// when Options.NegativeTimeout did.
func (r NegativeRule) String() string {
	switch {
	case !r.FromLock:
		return "override"
	case r.Timeout > 0:
		return "lock:cached"
	}
	return "lock:uncached"
}

// Server is a fuse.RawFileSystem serving one tree. With a kernel cache on
// it keeps the cache truthful as the package doc says: a change is told
// to the kernel by the notifier goroutine, and the writer waits for that
// within a bound, so no thread that serves requests ever blocks on the
// kernel's notification handling.
type Server struct {
	fuse.RawFileSystem // ENOSYS for what a sysfs does not do

	tree    *kernfsim.Tree   // immutable
	opts    Options          // immutable
	neg     NegativeRule     // immutable: ResolveNegatives(opts, the tree's traits)
	reads   locking.ReadSide // immutable: nodeids resolve under the read side unless reads are scoped
	nodes   nodeTable
	handles handleTable
	stats   *Stats // immutable pointer

	fuse        atomic.Pointer[fuse.Server] // set by Init
	unsubscribe func()                      // immutable
	notes       *notifier                   // immutable pointer: the kernel notification queue
	transport   atomic.Pointer[transportInfo]
}

// transportInfo is what the stats file says of the transport.
type transportInfo struct {
	srv         *uring.Server
	primedPolls atomic.Uint64 // srv.Polls() once the POLL prime was answered
}

func (s *Server) setTransport(srv *uring.Server) {
	s.transport.Store(&transportInfo{srv: srv})
}

var _ fuse.RawFileSystem = (*Server)(nil)

// New returns a server for tree. It subscribes to the tree's changes to
// keep kernel caches truthful; Close unsubscribes.
func New(tree *kernfsim.Tree, opts Options) *Server {
	if opts.Permissions == "" {
		opts.Permissions = PermServer
	}
	s := &Server{
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		tree:          tree,
		opts:          opts,
		neg:           ResolveNegatives(opts, tree.Strategy().Traits()),
		reads:         locking.ReadSideOf(tree.Strategy()),
		stats:         newStats(),
	}
	s.nodes.t.release = true // nodeids are never reused
	s.nodes.pin(tree.Root())
	s.notes = newNotifier(s.kernel, notifyCap, s.longestTimeout()+time.Second)
	s.unsubscribe = tree.Subscribe(s.invalidate)
	return s
}

// Close stops kernel notifications: it unsubscribes, drops what is still
// queued (after an unmount the kernel has nothing left to invalidate) and
// stops the notifier goroutine.
func (s *Server) Close() {
	s.unsubscribe()
	s.notes.close()
}

func (s *Server) String() string { return "kernfsim" }

// Init keeps the go-fuse server for notifications.
func (s *Server) Init(fs *fuse.Server) { s.fuse.Store(fs) }

// Negatives is the rule the server answers missing names by.
func (s *Server) Negatives() NegativeRule { return s.neg }

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

// cred is the caller of h as a request shows it: uid and gid, its
// supplementary groups unread (withGroups reads them where they decide).
func cred(h *fuse.InHeader) kernfsim.Cred {
	return kernfsim.Cred{Uid: h.Uid, Gid: h.Gid, GroupsUnread: true}
}
