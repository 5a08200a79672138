// Package uring serves a go-fuse fuse.RawFileSystem over FUSE-over-io_uring (Linux 6.14+).
//
// The kernel has one queue per possible CPU and queues a request issued
// on CPU c to queue c. Each queue is served by an io_uring (or several
// queues by one, with Config.Rings) whose threads are pinned to its
// CPUs. The thread leading a ring answers a request in place and fetches
// the next one in the same io_uring_enter, so no lock is shared between
// rings and none is taken per request.
//
// NewServer is go-fuse's fuse.NewServer with a Config (and Mount is
// go-fuse's fs.Mount): it mounts, and where the kernel offers io_uring the
// queues serve every request but FORGET and INTERRUPT; elsewhere (an old
// kernel, the fuse module's enable_uring off, no CAP_SYS_ADMIN to mount)
// go-fuse's own /dev/fuse loop serves, and FellBack says why. Either way
// the returned Server is used as a fuse.Server is: Serve, WaitMount,
// Unmount, and go-fuse's notification methods, which it embeds.
// Transport, Queues, Rings, Depth, Served, Polls, Handoffs and
// PinnedBytes say what it got. WaitEnded ends its threads after a
// connection ended from outside (an unmount(2) or abort of its own).
//
// go-fuse keeps what the rings do not carry: INIT (which negotiates
// io_uring), FORGET, INTERRUPT and notifications, on /dev/fuse. The
// package mounts with mount(2) itself and hands go-fuse the descriptor as
// /dev/fd/N, since the queues need it and go-fuse does not give out the
// descriptor of a mount it made; in RawFileSystem.Init, after go-fuse has
// answered INIT, the queues register.
//
// The queues answer every opcode go-fuse's loop answers (fuse/opcode.go),
// as it answers them, with the same RawFileSystem method; a test holds
// them to go-fuse's own decoder, opcode by opcode, and go-fuse's own test
// suite runs over them (scripts/gofuse-suite.sh). go-fuse's decoding is
// not reused: its exported ProtocolServer.HandleRequest (for virtiofs)
// allocates a request and a channel and takes a server-wide mutex twice
// per request.
//
// No handler can stall its queue (handoff.go). A request is served inline
// on the ring's leading thread; a handler still running after one watch
// period (10 ms) loses the lead to another thread of the ring, which
// serves on, and hands its reply back when it returns. WRITE and SETATTR
// are served on goroutines of their own (a writer may wait for the
// kernel). A ring keeps two entries per queue free of such requests,
// registering more as they are held (grow.go). With Config.DeferTaskRun
// only the ring's creator may enter it, so its lead is never taken.
//
// go-fuse's MountOptions over the rings:
//
//	mount(2) options: AllowOther,     as go-fuse's direct mount passes them
//	Options, FsName, Name, Direct*,   (mount.go); fusermount is never used
//	IDMappedMount
//	INIT options: MaxBackground,      go-fuse answers INIT on /dev/fuse:
//	CongestionThreshold, MaxReadAhead, the kernel gets what go-fuse tells it
//	EnableLocks, EnableAcl, SyncRead,
//	DisableReadDirPlus, Explicit-
//	DataCacheControl, EnableSymlink-
//	Caching, Disabled/ExtraCapabilities
//	MaxWrite                          also sizes each entry's payload; go-fuse's
//	                                  retrieves are cut a page under it (retrieve.go)
//	MaxInflightRequestBytes           bounds the bytes of WRITE and SETATTR being
//	                                  served off the rings' threads (inflight.go)
//	SingleThreaded                    every request under one mutex, as go-fuse
//	Debug, Logger                     every request and reply logged, with its
//	                                  queue and request extensions (ext{...})
//	IgnoreSecurityLabels,             as go-fuse's loop
//	DisableXAttrs, PanicHandler,
//	RememberInodes, MaxStackDepth
//	DisableSplice                     no effect: the rings never splice (a READ
//	                                  reply is copied into the entry's payload)
//
// Concurrency: a ring's SQ and CQ, its entry table and per-queue counts
// are used by its leading thread only; the lead passes between threads
// through the lead word's CAS (handoff.go), which orders everything the
// old leader did before the new one starts. An entry whose request is
// served off the leader (a WRITE's goroutine, a handler whose lead was
// taken) is written by that server only, and handed back through the
// ring's finished channel and wake eventfd; the leader commits it.
// Shared between threads: queue.served, handler.polls and the busy
// counts (atomic), each worker's serving word (with the watchdog), the
// ringSet's channels, and each ring's stop eventfd (written by stop,
// closed by the ringSet after every thread has ended). A Server's fields
// are immutable once NewServer returns, but unmounted (atomic).
//
// Threads and Ps: threads are one per ring, plus one per handler blocked
// past a watch period (each holds an entry, so entries bound them). With
// Config.HoldP a thread that has just served waits for its next request
// holding its P, and GOMAXPROCS is one higher per ring
// (docs/notes/2026-12-02-uring-holds-its-p.md says why).
//
// Memory the kernel writes into (rings, header pages, payloads) is mapped
// outside the Go heap and holds no Go pointers; it is unmapped only after
// the kernel has released every entry (or never had one). PinnedBytes says
// how much at the start; Config.MaxPinnedBytes bounds it, growth
// included.
package uring

import (
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Server is a mounted go-fuse server whose requests arrive on per-CPU
// io_uring queues where the kernel offers them, and on /dev/fuse
// otherwise. The embedded fuse.Server answers INIT, FORGET and INTERRUPT,
// sends notifications, and serves every request when on /dev/fuse.
type Server struct {
	*fuse.Server

	mnt       string
	own       bool   // mounted here, on /dev/fd/N: Unmount is this package's
	conn      uint32 // the connection's number, for aborting it; 0 if unknown
	logger    *log.Logger
	rings     *ringSet // nil unless queues were started, whether or not the kernel took them
	ringFD    int      // the queues' duplicate of the /dev/fuse descriptor
	onURing   bool     // the queues registered: set by Init, within NewServer
	fellBack  error    // why not io_uring; set within NewServer
	geometry  geometry
	maxWrite  int
	done      chan struct{} // closed when Serve returns
	unmounted atomic.Bool
}

// ringFS is the file system go-fuse serves on a connection that offers
// io_uring: the user's, plus an Init that registers the queues once
// INIT is answered.
type ringFS struct {
	fuse.RawFileSystem
	s *Server
}

func (r ringFS) Init(srv *fuse.Server) {
	r.RawFileSystem.Init(srv)
	r.s.register(srv)
}

// NewServer mounts fs on mountPoint as fuse.NewServer does with opts, and
// serves it over io_uring as cfg says: where it can be had (and cfg.Only
// is not DevFuse), else over /dev/fuse (with cfg.Only URing, an error
// instead, wrapping ErrUnavailable). Serving starts with Serve. It asks
// Available first: where that rules io_uring out (an old kernel, the
// fuse module's enable_uring off, not root) the reason wraps
// ErrNotOffered, and go-fuse mounts as it would (fusermount for a user).
func NewServer(fs fuse.RawFileSystem, mountPoint string, opts *fuse.MountOptions, cfg Config) (*Server, error) {
	switch cfg.Only {
	case Auto, DevFuse, URing:
	default:
		return nil, fmt.Errorf("uring: Config.Only is %q, want %q, %q or empty", cfg.Only, DevFuse, URing)
	}
	mnt, err := filepath.Abs(mountPoint)
	if err != nil {
		return nil, err
	}
	o := withDefaults(fs, opts)
	s := &Server{mnt: mnt, logger: o.Logger, ringFD: -1, maxWrite: o.MaxWrite, done: make(chan struct{})}
	if cfg.Only != DevFuse {
		why, err := s.mountURing(fs, *o, cfg)
		switch {
		case err != nil:
			return nil, err
		case why == nil:
			return s, nil
		case cfg.Only == URing:
			return nil, why
		case !errors.Is(why, ErrUnavailable):
			why = fmt.Errorf("%w: %w", ErrUnavailable, why)
		}
		s.fellBack = why
	}
	srv, err := fuse.NewServer(fs, mnt, o)
	if err != nil {
		return nil, err
	}
	s.Server, s.maxWrite = srv, o.MaxWrite
	return s, nil
}

// withDefaults is a copy of opts with go-fuse's defaults for what this
// package reads: Logger, MaxWrite and Name.
func withDefaults(fs fuse.RawFileSystem, opts *fuse.MountOptions) *fuse.MountOptions {
	o := fuse.MountOptions{MaxBackground: 12} // go-fuse's for nil options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = log.Default()
	}
	o.MaxWrite = effectiveMaxWrite(o.MaxWrite)
	if o.Name == "" {
		name := fs.String()
		o.Name = strings.ReplaceAll(name[:min(len(name), 20)], ",", ";")
	}
	return &o
}

// mountURing mounts s.mnt on a descriptor of its own, starts the queues
// and lets go-fuse answer INIT with io_uring offered. It returns why not,
// having mounted nothing, where io_uring cannot be had before the mount
// (wrapping ErrUnavailable) or mount(2) fails; past the mount it serves,
// over /dev/fuse if the queues cannot be made or the kernel refuses them
// (s.fellBack says why; with cfg.Only URing that is err, and the mount is
// ended).
func (s *Server) mountURing(fs fuse.RawFileSystem, o fuse.MountOptions, cfg Config) (why, err error) {
	if why := s.prepare(&o, cfg); why != nil {
		return why, nil
	}
	fd, err := mountDirect(s.mnt, &o)
	if err != nil {
		return err, nil
	}
	s.conn, _ = connection(s.mnt)
	rfs := s.startRings(fs, fd, &o)
	if s.fellBack != nil && cfg.Only == URing {
		unix.Unmount(s.mnt, unix.MNT_DETACH)
		unix.Close(fd)
		return nil, s.fellBack
	}
	o.DirectMount, o.DirectMountStrict = false, false                  // mounted: go-fuse takes the descriptor
	srv, err := fuse.NewServer(rfs, fmt.Sprintf("/dev/fd/%d", fd), &o) // closes fd on failure
	if err != nil {
		unix.Unmount(s.mnt, unix.MNT_DETACH)
		if s.rings != nil {
			s.rings.abandon()
		}
		return nil, fmt.Errorf("mount %s: %w", s.mnt, err)
	}
	s.Server, s.own, s.maxWrite = srv, true, o.MaxWrite
	if s.fellBack != nil && cfg.Only == URing {
		s.discard()
		return nil, s.fellBack
	}
	return nil, nil
}

// prepare says why io_uring cannot be had, wrapping ErrUnavailable, or
// sizes the queues (s.geometry, and o.MaxWrite to fit the cap).
func (s *Server) prepare(o *fuse.MountOptions, cfg Config) error {
	if err := Available(); err != nil {
		return err
	}
	if err := goFuseLayout(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if o.DisabledCapabilities&fuse.CAP_OVER_IO_URING != 0 {
		return fmt.Errorf("%w: MountOptions.DisabledCapabilities has CAP_OVER_IO_URING", ErrUnavailable)
	}
	cpus, err := PossibleCPUs()
	if err == nil {
		s.geometry, o.MaxWrite, err = plan(cfg, cpus, o.MaxWrite)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// startRings starts the queues on a duplicate of fd and returns the file
// system go-fuse is to serve: fs wrapped to register them, with io_uring
// offered in o; or, if they cannot be made, fs itself, and s.fellBack
// says why.
func (s *Server) startRings(fs fuse.RawFileSystem, fd int, o *fuse.MountOptions) fuse.RawFileSystem {
	ringFD, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		h := newHandler(fs, o)
		h.mnt = s.mnt
		s.rings, err = startRings(h, ringFD, s.geometry, s.fatal)
		if err != nil {
			unix.Close(ringFD)
		}
	}
	if err != nil {
		s.fellBack = fmt.Errorf("%w: %w", ErrUnavailable, err)
		return fs
	}
	s.ringFD = ringFD
	go func() { <-s.rings.done; unix.Close(ringFD) }()
	o.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	return ringFS{RawFileSystem: fs, s: s}
}

// register runs in go-fuse's Init, after the INIT reply: the queues
// register if the kernel offered io_uring.
func (s *Server) register(srv *fuse.Server) {
	if srv.KernelSettings().Flags64()&fuse.CAP_OVER_IO_URING == 0 {
		s.rings.abandon()
		s.fellBack = fmt.Errorf("%w: the kernel did not offer io_uring at INIT", ErrUnavailable)
		return
	}
	hookGoFuse(srv, s.rings.handler, s.geometry.payload)
	if err := s.rings.registerAll(s.ringFD); err != nil {
		s.fellBack = fmt.Errorf("%w: the kernel refused the queues: %w", ErrUnavailable, err)
		return
	}
	s.onURing = true
}

// discard ends a connection NewServer will not return: it aborts and
// detaches the mount and serves until go-fuse's loop and the queues end.
func (s *Server) discard() {
	abortConn(s.conn, s.mnt)
	unix.Unmount(s.mnt, unix.MNT_DETACH)
	s.Serve()
}

// fatal is called once, from a queue thread whose ring failed while
// serving: that CPU's requests can no longer be answered, so the
// connection is aborted and every client gets ENOTCONN, not a hang.
func (s *Server) fatal(err error) {
	s.logger.Printf("uring: a queue failed, aborting the FUSE connection: %v", err)
	if err := abortConn(s.conn, s.mnt); err != nil {
		s.logger.Printf("uring: %v", err)
	}
}

// Serve serves requests until the file system is unmounted (or its
// connection aborted) and every queue thread has ended, then calls the
// file system's OnUnmount, as fuse.Server.Serve does. Call it once.
func (s *Server) Serve() {
	defer close(s.done)
	s.Server.Serve()
	if s.rings != nil {
		s.rings.end()
		<-s.rings.done
	}
}

// Wait waits for Serve's loops to end, as fuse.Server.Wait does.
func (s *Server) Wait() {
	s.Server.Wait()
	if s.rings != nil {
		<-s.rings.done
	}
}

// WaitMount waits until the mount is served, as fuse.Server.WaitMount
// does, and primes it (PrimeNoPoll): a client in this process can then
// open files on it without risking a deadlock with the garbage
// collector. Call it after Serve has started.
func (s *Server) WaitMount() error {
	if err := s.Server.WaitMount(); err != nil {
		return err
	}
	return PrimeNoPoll(s.mnt)
}

// releaseWait bounds how long Unmount waits for the kernel to release
// the queues' entries once the connection has ended.
const releaseWait = 2 * time.Second

// Unmount unmounts the file system as fuse.Server.Unmount does (with
// go-fuse's retries while the kernel still counts a file as open) and
// waits for Serve's loops to end; it is idempotent. Queue threads that a
// file system method still holds are told to end after releaseWait.
func (s *Server) Unmount() error {
	if !s.own {
		return s.Server.Unmount()
	}
	if s.unmounted.Load() {
		return nil
	}
	if err := unmount(s.mnt); err != nil {
		return err
	}
	s.unmounted.Store(true)
	s.Server.Wait()
	if s.rings != nil {
		select {
		case <-s.rings.done:
		case <-time.After(releaseWait):
			s.rings.stop()
		}
	}
	return nil
}

// Done is closed when Serve has returned.
func (s *Server) Done() <-chan struct{} { return s.done }

// WaitEnded is for a connection ended from outside the Server (its mount
// unmounted with unmount(2), or the connection aborted): it waits at most
// timeout for Serve to return, and reports whether it did. If not, a file
// system method holds a queue's entry, and it ends every queue thread
// now, without waiting for the kernel to release their entries: no thread
// outlives the mount, whatever the kernel still holds.
func (s *Server) WaitEnded(timeout time.Duration) bool {
	select {
	case <-s.done:
		return true
	case <-time.After(timeout):
	}
	s.stopQueues()
	return false
}

// stopQueues ends every queue thread now (see WaitEnded).
func (s *Server) stopQueues() {
	if s.rings != nil {
		s.rings.stop()
	}
}

// Transport is how requests reach the server: URing or DevFuse.
func (s *Server) Transport() Kind {
	if s.onURing {
		return URing
	}
	return DevFuse
}

// FellBack says why the server is on /dev/fuse although io_uring was not
// ruled out (Config.Only empty); it wraps ErrUnavailable. It is nil on
// io_uring and with Config.Only DevFuse.
func (s *Server) FellBack() error { return s.fellBack }

// Queues is the number of io_uring queues (one per possible CPU), 0 on
// /dev/fuse.
func (s *Server) Queues() int {
	if !s.onURing {
		return 0
	}
	return s.geometry.queues
}

// Rings is the number of rings serving the queues: Queues, unless
// Config.Rings folds them onto fewer; 0 on /dev/fuse.
func (s *Server) Rings() int {
	if !s.onURing {
		return 0
	}
	return s.geometry.rings
}

// Depth is the number of ring entries per queue, 0 on /dev/fuse.
func (s *Server) Depth() int {
	if !s.onURing {
		return 0
	}
	return s.geometry.depth
}

// Served returns the number of requests each ring has answered (one ring
// per queue unless Config.Rings folds them); nil on
// /dev/fuse.
func (s *Server) Served() []uint64 {
	if !s.onURing {
		return nil
	}
	return s.rings.served()
}

// Polls is the number of POLL requests the queues have answered (all
// with ENOSYS), the one WaitMount's prime sends included. Once a POLL
// has been answered the kernel sends no more on the connection, so a
// count above one means a POLL reached the queues before the prime's
// answer did. On /dev/fuse go-fuse answers POLL unseen, and it is 0.
func (s *Server) Polls() uint64 {
	if !s.onURing {
		return 0
	}
	return s.rings.handler.polls.Load()
}

// DeferTaskRun reports whether the queues' rings defer their task work
// (Config.DeferTaskRun); false on /dev/fuse.
func (s *Server) DeferTaskRun() bool { return s.onURing && s.geometry.deferTW }

// PinnedBytes is the memory the queues' buffers hold for the
// connection's life: Queues × Depth × (a 4 KiB header page + the payload,
// MaxWrite rounded up to pages, at least 8 KiB). 0 on /dev/fuse.
func (s *Server) PinnedBytes() int64 {
	if !s.onURing {
		return 0
	}
	return s.geometry.pinned()
}

// MaxWrite is the largest WRITE (and, as max_read, READ) the kernel
// sends: MountOptions.MaxWrite or go-fuse's default, clamped by the
// kernel's fs.fuse.max_pages_limit and by Config.MaxPinnedBytes.
func (s *Server) MaxWrite() int { return s.maxWrite }

// Mount is go-fuse's fs.Mount over NewServer: it mounts the node tree
// root on dir, starts serving and waits until the mount is served and
// primed. Unmount ends it; Wait waits for the serving to end.
func Mount(dir string, root gofs.InodeEmbedder, options *gofs.Options, cfg Config) (*Server, error) {
	var opts *fuse.MountOptions
	if options != nil {
		opts = &options.MountOptions
	}
	s, err := NewServer(gofs.NewNodeFS(root, options), dir, opts, cfg)
	if err != nil {
		return nil, err
	}
	go s.Serve()
	if err := s.WaitMount(); err != nil {
		s.Unmount() // the prime failed on a served mount
		return nil, err
	}
	return s, nil
}

// Handoffs returns how many times a queue's lead was taken from a handler
// that was still running after one watch period, and how many ring
// entries the queues registered beyond their first depth to stay ahead of
// requests served off the lead (handoff.go, grow.go). Both are 0 on
// /dev/fuse.
func (s *Server) Handoffs() (taken, grown uint64) {
	if s.rings == nil || !s.onURing {
		return 0, 0
	}
	return s.rings.handoffs()
}

// Threads is the number of threads serving the rings: one per ring, and
// one more per handler blocked past a watch period, until it has been
// parked unneeded for a second (handoff.go). 0 on /dev/fuse.
func (s *Server) Threads() int {
	if s.rings == nil || !s.onURing {
		return 0
	}
	n := 0
	for _, q := range s.rings.queues {
		if ws := q.workers.Load(); ws != nil {
			n += len(*ws)
		}
	}
	return n
}
