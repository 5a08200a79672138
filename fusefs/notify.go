package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// Kernel notifications (FUSE_NOTIFY_INVAL_ENTRY, _DELETE, _INVAL_INODE)
// are sent by one goroutine per Server, the notifier, never by the writer
// that made the change: kernfs_notify, likewise, runs from a workqueue.
//
// Why: the kernel handles an entry notification under the directory's
// i_rwsem, taken exclusively, so it waits for every lookup and readdir in
// progress in that directory, and each of those waits for its FUSE
// request. Over io_uring a request of a client on CPU c is served by queue
// c's thread alone, and that thread may be the writer (a WRITE to
// new_device runs the tree change in the queue thread): a notification
// sent from it waited for a LOOKUP queued behind itself (issue 23).
//
// The queue. Notices are kept in FIFO order of their first queueing and
// coalesced: one per inode (attributes), and per (directory, name) the
// newest queued entry or delete notice absorbs a later change of that
// name (an entry notice becomes a delete notice when the name's node is
// removed; a later entry notice is absorbed by a queued delete notice,
// which invalidates the dentry whatever it points to). So an add's notice
// is never sent before an earlier remove of the same name, and a notice
// still queued is sent after every change it absorbed was published: the
// kernel, re-asking, sees the tree as it is then. At most notifyCap
// notices are queued; see enqueue for what happens past it.
//
// The waits. A writer waits for its own notices (Server.invalidate), but
// gives up once the notifier has been inside one kernel call for a bound
// (held there on a directory's lock), or after a total bound
// (waitBounds): short over io_uring, where the lookup holding the lock may
// sit in the waiting queue thread's own queue, long over /dev/fuse, where
// go-fuse serves it from another goroutine. A notifier that is merely not
// yet scheduled is waited for (the waiting thread gives up its P). Either
// way no writer waits without a bound, so the notifier is never waited
// for, for long, by a thread it needs.

// notifyCap is the most notices a Server queues at once.
const notifyCap = 1 << 14

// noticeKind is what a notice tells the kernel.
type noticeKind uint8

const (
	noticeEntry  noticeKind = iota + 1 // EntryNotify(dir, name): the name's dentry, positive or negative, is stale
	noticeDelete                       // DeleteNotify(dir, child, name): also, child is gone
	noticeInode                        // InodeNotify(ino): its attributes are stale
)

// notice is one queued notification. Fields are protected by notifier.mu
// while queued (enqueue may turn an entry notice into a delete notice).
type notice struct {
	kind  noticeKind
	ino   uint64 // the directory (entry, delete) or the inode
	child uint64 // delete: the removed node's nodeid
	name  string // entry, delete
	seq   uint64 // place in the FIFO
}

// nameKey is a (directory, name) pair.
type nameKey struct {
	dir  uint64
	name string
}

// kernel is what the notifier sends through: go-fuse's *fuse.Server, or a
// test's fake.
type kernel interface {
	EntryNotify(parent uint64, name string) fuse.Status
	DeleteNotify(parent, child uint64, name string) fuse.Status
	InodeNotify(node uint64, off, length int64) fuse.Status
}

// waitBounds say how long a writer waits for its notices: until the
// notifier has been inside one kernel call for held, or for total in all.
type waitBounds struct{ held, total time.Duration }

// writerWait is how long a writer waits for its notices, on either
// transport. No writer runs on a thread that serves requests: over
// /dev/fuse other goroutines serve what a held notifier waits for, and
// over io_uring the queues serve the requests that change the tree
// (WRITE, SETATTR) on goroutines of their own. The bound is for a kernel
// that holds a notification while every reader of go-fuse is busy.
var writerWait = waitBounds{held: time.Second, total: 5 * time.Second}

// NotifyStats count a Server's kernel notifications.
type NotifyStats struct {
	Queued    uint64 // notices queued
	Coalesced uint64 // changes absorbed by a notice already queued
	Sent      uint64 // notices sent to the kernel
	Pending   uint64 // notices queued and not yet sent
	Overflows uint64 // notices dropped because notifyCap were queued
	Unwaited  uint64 // writers that returned before their notices were sent
	Dropped   uint64 // notices dropped by Close
}

// notifier is a Server's notification queue and the goroutine that
// drains it, started on the first notice.
type notifier struct {
	kernel   func() kernel // immutable: nil until INIT
	capacity int           // immutable
	staleFor time.Duration // immutable: the longest cache timeout, plus slack

	mu         sync.Mutex
	fifo       []*notice           // protected by mu: queued notices from head, oldest first
	head       int                 // protected by mu
	names      map[nameKey]*notice // protected by mu: newest queued entry or delete notice per name
	inodes     map[uint64]*notice  // protected by mu
	next       uint64              // protected by mu: seq of the next notice queued
	progress   chan struct{}       // protected by mu: closed and replaced when a notice is sent; closed by close
	running    bool                // protected by mu: the goroutine was started
	closed     bool                // protected by mu
	staleUntil time.Time           // protected by mu: after an overflow, when the kernel's timeouts have expired what was dropped

	wake chan struct{} // immutable; capacity 1: a notice was queued
	stop chan struct{} // immutable; closed by close
	done chan struct{} // immutable; closed when the goroutine returns

	sent                                            atomic.Uint64 // accessed atomically: notices with seq < sent were sent
	sending                                         atomic.Int64  // accessed atomically: when the kernel call in progress began (UnixNano), 0 if none
	queued, coalesced, overflows, unwaited, dropped atomic.Uint64 // accessed atomically
}

func newNotifier(k func() kernel, capacity int, staleFor time.Duration) *notifier {
	return &notifier{
		kernel: k, capacity: capacity, staleFor: staleFor,
		names: make(map[nameKey]*notice), inodes: make(map[uint64]*notice),
		progress: make(chan struct{}),
		wake:     make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// enqueue queues n, or lets a queued notice absorb it, and returns the
// seq of the notice that tells the kernel; ok is false if nothing will
// (closed, or dropped). It never blocks: a ring queue thread calls it.
//
// Past notifyCap queued notices a new notice is dropped and counted as an
// overflow: the kernel then keeps what it cached for at most the mount's
// timeouts, which it does without notifications too, and NotifyBarrier
// waits that long (staleUntil). The queue only fills if the kernel holds
// the notifier for long while writers keep changing the tree.
func (q *notifier) enqueue(n notice) (seq uint64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, false
	}
	if old := q.absorbLocked(n); old != nil {
		q.coalesced.Add(1)
		return old.seq, true
	}
	if len(q.fifo)-q.head >= q.capacity {
		q.overflows.Add(1)
		q.staleUntil = time.Now().Add(q.staleFor)
		return 0, false
	}
	p := &n
	p.seq = q.next
	q.next++
	q.fifo = append(q.fifo, p)
	if p.kind == noticeInode {
		q.inodes[p.ino] = p
	} else {
		q.names[nameKey{p.ino, p.name}] = p
	}
	q.queued.Add(1)
	if !q.running {
		q.running = true
		go q.run()
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return p.seq, true
}

// absorbLocked returns the queued notice that also tells the kernel of
// n, made to do so, or nil.
//
// Preconditions: q.mu is held.
func (q *notifier) absorbLocked(n notice) *notice {
	if n.kind == noticeInode {
		return q.inodes[n.ino]
	}
	old := q.names[nameKey{n.ino, n.name}]
	switch {
	case old == nil:
		return nil
	case n.kind == noticeEntry:
		return old // an entry or delete notice of the name, sent later
	case old.kind == noticeEntry:
		old.kind, old.child = noticeDelete, n.child
		return old
	}
	return nil // a delete notice of another node of that name: both are sent
}

// pop takes the oldest queued notice, or reports that there is none.
func (q *notifier) pop() (notice, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.fifo) {
		q.fifo, q.head = q.fifo[:0], 0
		return notice{}, false
	}
	p := q.fifo[q.head]
	q.fifo[q.head] = nil
	q.head++
	if p.kind == noticeInode {
		delete(q.inodes, p.ino)
	} else if k := (nameKey{p.ino, p.name}); q.names[k] == p {
		delete(q.names, k)
	}
	if q.head > 1024 && q.head > len(q.fifo)/2 {
		q.fifo, q.head = append(q.fifo[:0], q.fifo[q.head:]...), 0
	}
	return *p, true
}

// run is the notifier: it sends queued notices one at a time, in order,
// until close. Errors (ENOENT: the kernel did not know the entry or
// inode) are expected and ignored.
func (q *notifier) run() {
	defer close(q.done)
	for {
		n, ok := q.pop()
		if !ok {
			select {
			case <-q.wake:
				continue
			case <-q.stop:
				return
			}
		}
		if k := q.kernel(); k != nil {
			q.sending.Store(time.Now().UnixNano())
			n.send(k)
			q.sending.Store(0)
		}
		q.sent.Store(n.seq + 1)
		q.mu.Lock()
		if !q.closed {
			close(q.progress)
			q.progress = make(chan struct{})
		}
		q.mu.Unlock()
	}
}

func (n *notice) send(k kernel) {
	switch n.kind {
	case noticeEntry:
		k.EntryNotify(n.ino, n.name)
	case noticeDelete:
		k.DeleteNotify(n.ino, n.child, n.name)
	case noticeInode:
		k.InodeNotify(n.ino, -1, 0)
	}
}

// wait waits until the notice seq has been sent and reports whether it
// was: it gives up once one kernel call of the notifier has lasted
// b.held, after b.total, or when the queue is closed.
func (q *notifier) wait(seq uint64, b waitBounds) bool {
	if q.sent.Load() > seq {
		return true
	}
	deadline := time.Now().Add(b.total)
	timer := time.NewTimer(b.held)
	defer timer.Stop()
	for {
		q.mu.Lock()
		progress, closed := q.progress, q.closed
		q.mu.Unlock()
		if q.sent.Load() > seq {
			return true
		}
		now := time.Now()
		next := min(deadline.Sub(now), b.held) // re-check at least this often
		if since := q.sending.Load(); since != 0 {
			held := time.Unix(0, since).Add(b.held).Sub(now)
			if held <= 0 {
				break // held in the kernel: perhaps by this very thread
			}
			next = min(next, held)
		}
		if closed || next <= 0 {
			break
		}
		timer.Reset(next)
		select {
		case <-progress:
		case <-timer.C:
		}
	}
	q.unwaited.Add(1)
	return false
}

// barrier returns when every notice queued before it has been sent and,
// after an overflow, the kernel's timeouts have expired what was dropped;
// or when ctx is done, or the queue closed.
func (q *notifier) barrier(ctx context.Context) error {
	q.mu.Lock()
	target, until := q.next, q.staleUntil
	q.mu.Unlock()
	for q.sent.Load() < target {
		q.mu.Lock()
		progress, closed := q.progress, q.closed
		q.mu.Unlock()
		if closed {
			return nil
		}
		if q.sent.Load() >= target {
			break
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if d := time.Until(until); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// close drops what is still queued and stops the goroutine. It waits for
// it at most closeWait: a notice being sent may be held in the kernel,
// and the goroutine then returns when the kernel lets it go.
func (q *notifier) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.dropped.Add(uint64(len(q.fifo) - q.head))
	q.fifo, q.head = nil, 0
	clear(q.names)
	clear(q.inodes)
	close(q.progress)
	running := q.running
	q.mu.Unlock()
	close(q.stop)
	if running {
		select {
		case <-q.done:
		case <-time.After(closeWait):
		}
	}
}

// closeWait bounds how long close waits for the notifier to return.
const closeWait = 2 * time.Second

func (q *notifier) stats() NotifyStats {
	q.mu.Lock()
	pending := uint64(len(q.fifo) - q.head)
	q.mu.Unlock()
	return NotifyStats{
		Queued: q.queued.Load(), Coalesced: q.coalesced.Load(), Sent: q.sent.Load(), Pending: pending,
		Overflows: q.overflows.Load(), Unwaited: q.unwaited.Load(), Dropped: q.dropped.Load(),
	}
}

// caching reports whether the kernel may cache anything that a tree change
// could make stale.
func (s *Server) caching() bool {
	return s.longestTimeout() > 0
}

// longestTimeout is the longest the kernel keeps anything it caches.
func (s *Server) longestTimeout() time.Duration {
	return max(s.opts.EntryTimeout, s.opts.AttrTimeout, s.neg.Timeout)
}

// kernel is the go-fuse server that notifications go through, or nil
// before INIT.
func (s *Server) kernel() kernel {
	if srv := s.fuse.Load(); srv != nil {
		return srv
	}
	return nil
}

// waitBounds are the bounds for a writer's wait on this server.
func (s *Server) waitBounds() waitBounds { return writerWait }

// invalidate queues the notices for one tree change, so that no stale
// positive entry, negative entry or attribute is served, and waits for
// them within the server's waitBounds. It runs in the writer's goroutine
// (a tree subscriber) after the writer has released the tree lock, so the
// change is visible to the LOOKUP or GETATTR the kernel sends next.
func (s *Server) invalidate(ev kernfsim.Event) {
	if s.fuse.Load() == nil || !s.caching() {
		return
	}
	var last uint64
	waitFor := false
	add := func(n notice) {
		if seq, ok := s.notes.enqueue(n); ok {
			last, waitFor = max(last, seq), true
		}
	}
	switch ev.Op {
	case kernfsim.OpAdd:
		add(notice{kind: noticeEntry, ino: ev.Parent.Ino(), name: ev.Name}) // kills a cached negative entry
		add(notice{kind: noticeInode, ino: ev.Parent.Ino()})                // the parent's nlink and times
	case kernfsim.OpRemove:
		add(notice{kind: noticeDelete, ino: ev.Parent.Ino(), child: ev.Node.Ino(), name: ev.Name})
		add(notice{kind: noticeInode, ino: ev.Parent.Ino()})
	case kernfsim.OpRename:
		add(notice{kind: noticeEntry, ino: ev.OldParent.Ino(), name: ev.OldName})
		add(notice{kind: noticeEntry, ino: ev.Parent.Ino(), name: ev.Name})
	case kernfsim.OpSetattr:
		add(notice{kind: noticeInode, ino: ev.Node.Ino()})
	}
	if waitFor {
		s.notes.wait(last, s.waitBounds())
	}
}

// NotifyBarrier returns when every kernel notification queued before it
// has been sent (and, after an overflow, once the mount's longest timeout
// has passed since the last notice was dropped), so that the kernel
// serves nothing stale from then on; or when ctx is done. It must not be
// called from a request handler (it waits without bound but ctx's).
func (s *Server) NotifyBarrier(ctx context.Context) error { return s.notes.barrier(ctx) }

// NotifyStats returns the counters of the server's kernel notifications.
func (s *Server) NotifyStats() NotifyStats { return s.notes.stats() }
