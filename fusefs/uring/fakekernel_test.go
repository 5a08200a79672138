package uring

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// fakeKernel is the kernel's end of the rings, in process: io_uring's
// submission and completion rings, one-shot POLL_ADD on the queues'
// eventfds, and FUSE's REGISTER and COMMIT_AND_FETCH with the per-qid
// request queues of fs/fuse/dev_uring.c. It lets a test serve hundreds of
// qids on a machine with two CPUs, and inject requests on any qid.
//
// It keeps the kernel's rules that the queues depend on:
//   - the connection uses the rings only once every qid has at least one
//     registered entry; requests made before wait (fuse_block_alloc);
//   - a new request takes a free entry of its qid, even while older
//     requests wait, or waits in the qid's queue
//     (fuse_uring_queue_fuse_req);
//   - a REGISTER makes its entry free but hands it no waiting request
//     (fuse_uring_do_register); only a COMMIT_AND_FETCH does
//     (fuse_uring_commit_fetch);
//   - a REGISTER whose payload is too small completes at once with
//     -EINVAL; a command after the connection ended completes at once
//     with -ENOTCONN; the end completes every free entry with -ENOTCONN
//     and ends every request not yet answered with -ECONNABORTED.
//
// It is stricter than the kernel where that finds bugs: an entry
// registered twice, a commit for the wrong qid or unique, a reply whose
// header does not match, and a non-zero command area are recorded as
// protocol errors, which check reports.
//
// Lock ordering: fakeKernel.mu is a leaf; it is never held while a call
// blocks (enter waits in poll(2) with it released).
type fakeKernel struct {
	queues     int // nr_queues: every qid must register before the rings are used
	minPayload int // the payload a REGISTER must offer
	devFD      int // the /dev/fuse fd an SQE must name (directly or as fixed file 0)

	mu       sync.Mutex
	changed  *sync.Cond           // broadcast on every change of what follows; waitFor waits on it
	nextFD   int                  // protected by mu
	rings    map[int]*fakeRing    // by fd; protected by mu
	qs       []fakeQueue          // by qid; protected by mu
	inflight map[uint64]*fakeReq  // requests an entry holds, by unique; protected by mu
	unique   uint64               // last unique handed out; protected by mu
	ready    bool                 // every qid has registered; protected by mu
	ended    bool                 // end was called; protected by mu
	errs     []error              // protocol errors; protected by mu
	tids     map[int]map[int]bool // ring fd → threads that entered it; protected by mu
}

// fakeQueue is one qid's state (struct fuse_ring_queue); protected by
// fakeKernel.mu.
type fakeQueue struct {
	avail      []*fakeEnt // free entries, oldest first (ent_avail_queue)
	waiting    []*fakeReq // requests no entry holds yet (fuse_req_queue)
	registered int        // REGISTERs accepted for this qid
	rings      map[int]bool
}

// fakeEnt is one registered entry (struct fuse_ring_ent); protected by
// fakeKernel.mu, its memory written by the fake only while it holds a
// request the queue has not been told of.
type fakeEnt struct {
	ring     *fakeRing
	ud       uint64
	qid      int
	hdr      []byte // the queue's header page, from iov[0]
	payload  []byte // from iov[1]
	req      *fakeReq
	released bool // the kernel gave it up (the connection ended)
}

// fakeReq is a request injected by the test; protected by fakeKernel.mu.
type fakeReq struct {
	unique  uint64
	qid     int
	op      uint32
	nodeid  uint64
	opIn    []byte
	payload []byte
	reply   chan fakeReply // capacity 1; nil once answered
}

// fakeReply is what the maker of a request gets back: the reply's header
// status and payload, or the connection's end (status -ECONNABORTED).
type fakeReply struct {
	unique  uint64
	status  int32
	payload []byte
}

// fakeRing is one io_uring. Its fields are protected by fakeKernel.mu;
// of the ring words in its mappings, the fake writes the SQ head and the
// CQ tail (atomically), the queue the SQ tail and the CQ head.
type fakeRing struct {
	fd          int
	flags       uint32
	creator     int // thread that set it up (SINGLE_ISSUER)
	sq, cq, sqe []byte
	mapped      [3]bool // sq, cq, sqe still mapped
	sqEntries   uint32
	cqEntries   uint32
	notify      int // eventfd: a completion was posted
	files       []int32
	ents        map[uint64]*fakeEnt // by user_data
	polls       []fakePoll
	overflow    []cqe
	dead        bool // unmapped or closed: nothing is posted any more
}

// fakePoll is a pending POLL_ADD.
type fakePoll struct {
	fd     int32
	events uint32
	ud     uint64
}

// cmdReqSize is the part of the command area that FUSE reads; the rest
// must be zero.
const cmdReqSize = int(unsafe.Sizeof(cmdReq{}))

// Offsets of the fake's ring words; the arrays start on their own cache
// line.
const (
	fakeHead, fakeTail, fakeMask, fakeEntries = 0, 4, 8, 12
	fakeArray                                 = 64
)

// installFakeKernel makes the rings of this test use a fake kernel end
// with queues qids, until the test ends.
func installFakeKernel(t *testing.T, queues, devFD int) *fakeKernel {
	t.Helper()
	fk := &fakeKernel{queues: queues, minPayload: minPayload, devFD: devFD, nextFD: 1 << 20,
		rings: map[int]*fakeRing{}, qs: make([]fakeQueue, queues), inflight: map[uint64]*fakeReq{},
		tids: map[int]map[int]bool{}}
	fk.changed = sync.NewCond(&fk.mu)
	old := ringKernel
	ringKernel = fk
	t.Cleanup(func() { ringKernel = old })
	return fk
}

// errorfLocked records a protocol error.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) errorfLocked(format string, args ...any) {
	fk.errs = append(fk.errs, fmt.Errorf(format, args...))
}

// check fails the test with every protocol error recorded.
func (fk *fakeKernel) check(t *testing.T) {
	t.Helper()
	fk.mu.Lock()
	defer fk.mu.Unlock()
	for _, err := range fk.errs {
		t.Errorf("fake kernel: %v", err)
	}
}

func roundPow2(n uint32) uint32 {
	p := uint32(1)
	for p < n {
		p <<= 1
	}
	return p
}

func (fk *fakeKernel) setup(entries uint32, p *params) (int, unix.Errno) {
	if entries == 0 || entries > 1<<15 || p.flags&setupSQE128 == 0 {
		return -1, unix.EINVAL
	}
	r := &fakeRing{flags: p.flags, creator: unix.Gettid(), sqEntries: roundPow2(entries), ents: map[uint64]*fakeEnt{}}
	r.cqEntries = 2 * r.sqEntries
	if p.flags&setupCQSize != 0 {
		if p.cqEntries < r.sqEntries {
			return -1, unix.EINVAL
		}
		r.cqEntries = roundPow2(p.cqEntries)
	}
	var err error
	anon := func(n int) []byte {
		b, e := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		err = errors.Join(err, e)
		return b
	}
	r.sq = anon(fakeArray + 4*int(r.sqEntries))
	r.cq = anon(fakeArray + cqeSize*int(r.cqEntries))
	r.sqe = anon(sqeSize * int(r.sqEntries))
	r.mapped = [3]bool{true, true, true}
	if r.notify, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil || r.sq == nil || r.cq == nil || r.sqe == nil {
		r.unmap()
		return -1, unix.ENOMEM
	}
	*word(r.sq, fakeMask), *word(r.sq, fakeEntries) = r.sqEntries-1, r.sqEntries
	*word(r.cq, fakeMask), *word(r.cq, fakeEntries) = r.cqEntries-1, r.cqEntries
	*p = params{sqEntries: r.sqEntries, cqEntries: r.cqEntries, flags: p.flags,
		sqOff: sqringOffsets{head: fakeHead, tail: fakeTail, ringMask: fakeMask, ringEntries: fakeEntries, array: fakeArray},
		cqOff: cqringOffsets{head: fakeHead, tail: fakeTail, ringMask: fakeMask, ringEntries: fakeEntries, cqes: fakeArray}}
	// No featSingleMmap: the SQ and CQ rings are mapped apart, the path
	// the real kernel here (which has it) never takes.
	fk.mu.Lock()
	defer fk.mu.Unlock()
	r.fd = fk.nextFD
	fk.nextFD++
	fk.rings[r.fd] = r
	return r.fd, 0
}

// word is the uint32 at off in b.
func word(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// unmap releases whatever of r's memory is still mapped.
func (r *fakeRing) unmap() {
	for i, b := range [][]byte{r.sq, r.cq, r.sqe} {
		if r.mapped[i] && b != nil {
			unix.Munmap(b)
		}
		r.mapped[i] = false
	}
}

func (fk *fakeKernel) mmap(fd int, offset int64, size, prot, flags int) ([]byte, error) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	r := fk.rings[fd]
	if r == nil {
		return nil, unix.EBADF
	}
	var b []byte
	switch offset {
	case offSQRing:
		b = r.sq
	case offCQRing:
		b = r.cq
	case offSQEs:
		b = r.sqe
	default:
		return nil, unix.EINVAL
	}
	if size > len(b) {
		fk.errorfLocked("ring %d: mmap at %#x of %d bytes, the part has %d", fd, offset, size, len(b))
		return nil, unix.EINVAL
	}
	return b[:size], nil
}

// munmap unmaps a part of a ring; the ring is dead from then on.
func (fk *fakeKernel) munmap(b []byte) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	for _, r := range fk.rings {
		for i, part := range [][]byte{r.sq, r.cq, r.sqe} {
			if r.mapped[i] && len(b) > 0 && &part[0] == &b[0] {
				fk.killLocked(r)
				unix.Munmap(part)
				r.mapped[i] = false
				return
			}
		}
	}
	fk.errorfLocked("munmap of memory no ring mapped")
}

// killLocked makes r dead: its entries leave the qids' free lists, as
// the kernel's cancel of a closed ring's commands does.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) killLocked(r *fakeRing) {
	if r.dead {
		return
	}
	r.dead = true
	for _, e := range r.ents {
		e.released = true
		q := &fk.qs[e.qid]
		q.avail = slices.DeleteFunc(q.avail, func(a *fakeEnt) bool { return a == e })
	}
	fk.changed.Broadcast()
}

func (fk *fakeKernel) close(fd int) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	r := fk.rings[fd]
	if r == nil {
		fk.errorfLocked("close of ring %d, which is not open", fd)
		return
	}
	fk.killLocked(r)
	r.unmap()
	unix.Close(r.notify)
	delete(fk.rings, fd)
}

func (fk *fakeKernel) register(fd int, op uintptr, arg unsafe.Pointer, n uintptr) (uintptr, unix.Errno) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	r := fk.rings[fd]
	if r == nil {
		return 0, unix.EBADF
	}
	switch op {
	case registerFiles:
		if len(r.files) > 0 {
			return 0, unix.EBUSY
		}
		r.files = slices.Clone(unsafe.Slice((*int32)(arg), n))
		return 0, 0
	}
	// registerRingFDs among them: the queues then enter by the plain fd.
	return 0, unix.EINVAL
}

// enter is io_uring_enter: it consumes toSubmit SQEs, completes the
// polls whose eventfds are readable, and with GETEVENTS waits until
// minComplete completions are there (or a signal interrupts the wait).
func (fk *fakeKernel) enter(fd, toSubmit, minComplete, flags uintptr, raw bool) unix.Errno {
	tid := unix.Gettid()
	fk.mu.Lock()
	r := fk.rings[int(fd)]
	if r == nil || r.dead {
		fk.mu.Unlock()
		return unix.EBADF
	}
	if flags&enterRegisteredRing != 0 {
		fk.errorfLocked("ring %d entered as a registered ring, which the fake never granted", fd)
	}
	if r.flags&setupSingleIssuer != 0 && tid != r.creator {
		fk.mu.Unlock()
		return unix.EEXIST
	}
	if fk.tids[r.fd] == nil {
		fk.tids[r.fd] = map[int]bool{}
	}
	fk.tids[r.fd][tid] = true
	fk.submitLocked(r, uint32(toSubmit))
	fk.mu.Unlock()
	if flags&enterGetEvents == 0 || minComplete == 0 {
		return 0
	}
	return fk.wait(r, uint32(minComplete))
}

// wait blocks until r has want completions, polling r's notify eventfd
// and the eventfds of its pending polls.
func (fk *fakeKernel) wait(r *fakeRing, want uint32) unix.Errno {
	for {
		var buf [8]byte
		unix.Read(r.notify, buf[:])
		fk.mu.Lock()
		fk.pollLocked(r)
		fk.flushLocked(r)
		if atomic.LoadUint32(word(r.cq, fakeTail))-atomic.LoadUint32(word(r.cq, fakeHead)) >= want {
			fk.mu.Unlock()
			return 0
		}
		fds := []unix.PollFd{{Fd: int32(r.notify), Events: unix.POLLIN}}
		for _, p := range r.polls {
			fds = append(fds, unix.PollFd{Fd: p.fd, Events: int16(p.events)})
		}
		fk.mu.Unlock()
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			return unix.EINTR
		}
	}
}

// submitLocked consumes up to n SQEs.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) submitLocked(r *fakeRing, n uint32) {
	head := atomic.LoadUint32(word(r.sq, fakeHead))
	tail := atomic.LoadUint32(word(r.sq, fakeTail))
	for ; n > 0 && head != tail; n-- {
		idx := *word(r.sq, fakeArray+4*int(head&(r.sqEntries-1)))
		if idx >= r.sqEntries {
			fk.errorfLocked("ring %d: SQ array names SQE %d of %d", r.fd, idx, r.sqEntries)
		} else {
			s := *(*sqe)(unsafe.Pointer(&r.sqe[int(idx)*sqeSize]))
			fk.sqeLocked(r, &s)
		}
		head++
		atomic.StoreUint32(word(r.sq, fakeHead), head)
	}
	fk.pollLocked(r)
}

// sqeLocked carries out one SQE.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) sqeLocked(r *fakeRing, s *sqe) {
	switch s.opcode {
	case opPollAdd:
		r.polls = append(r.polls, fakePoll{fd: s.fd, events: s.opFlags, ud: s.userData})
		return
	case opUringCmd:
	default:
		fk.errorfLocked("ring %d: SQE opcode %d", r.fd, s.opcode)
		fk.postLocked(r, s.userData, -int32(unix.EINVAL))
		return
	}
	if !fk.devFileLocked(r, s) {
		fk.postLocked(r, s.userData, -int32(unix.EBADF))
		return
	}
	req := (*cmdReq)(unsafe.Pointer(&s.cmd[0]))
	if req.flags != 0 || req.pad != [6]uint8{} || [80 - cmdReqSize]byte(s.cmd[cmdReqSize:]) != [80 - cmdReqSize]byte{} ||
		s.pad1 != 0 || s.opFlags != 0 {
		fk.errorfLocked("ring %d: URING_CMD with non-zero padding or flags: %+v", r.fd, *s)
	}
	if fk.ended {
		fk.postLocked(r, s.userData, -int32(unix.ENOTCONN))
		if e := r.ents[s.userData]; e != nil {
			e.released = true
		}
		return
	}
	if int(req.qid) >= fk.queues {
		fk.postLocked(r, s.userData, -int32(unix.EINVAL))
		return
	}
	switch s.cmdOp {
	case cmdRegister:
		fk.registerLocked(r, s, int(req.qid))
	case cmdCommitAndFetch:
		fk.commitLocked(r, s.userData, int(req.qid), req.commitID)
	default:
		fk.errorfLocked("ring %d: URING_CMD op %d", r.fd, s.cmdOp)
		fk.postLocked(r, s.userData, -int32(unix.EINVAL))
	}
}

// devFileLocked reports whether s names /dev/fuse.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) devFileLocked(r *fakeRing, s *sqe) bool {
	if s.flags&sqeFixedFile != 0 {
		return s.fd >= 0 && int(s.fd) < len(r.files) && int(r.files[s.fd]) == fk.devFD
	}
	return int(s.fd) == fk.devFD
}

// registerLocked is FUSE_IO_URING_CMD_REGISTER: the entry becomes free
// for its qid, and the last qid to register makes the rings ready.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) registerLocked(r *fakeRing, s *sqe, qid int) {
	if s.len != 2 {
		fk.postLocked(r, s.userData, -int32(unix.EINVAL))
		return
	}
	// The SQE's addr is the address of the queue's iovecs, outside the
	// Go heap; read as a pointer, not converted from an integer.
	iov := (*[2]unix.Iovec)(*(*unsafe.Pointer)(unsafe.Pointer(&s.addr)))
	if iov[0].Len < hdrSize || iov[1].Len < uint64(fk.minPayload) {
		fk.postLocked(r, s.userData, -int32(unix.EINVAL))
		return
	}
	if e := r.ents[s.userData]; e != nil && !e.released {
		fk.errorfLocked("ring %d: entry %d registered again while the kernel holds it (qid %d)", r.fd, s.userData, e.qid)
	}
	e := &fakeEnt{ring: r, ud: s.userData, qid: qid,
		hdr: unsafe.Slice(iov[0].Base, iov[0].Len), payload: unsafe.Slice(iov[1].Base, iov[1].Len)}
	r.ents[s.userData] = e
	q := &fk.qs[qid]
	q.registered++
	if q.rings == nil {
		q.rings = map[int]bool{}
	}
	q.rings[r.fd] = true
	q.avail = append(q.avail, e)
	if !fk.ready && fk.allRegisteredLocked() {
		fk.ready = true
		for qid := range fk.qs {
			fk.dispatchLocked(qid)
		}
	}
	fk.changed.Broadcast()
}

func (fk *fakeKernel) allRegisteredLocked() bool {
	for _, q := range fk.qs {
		if len(q.avail) == 0 {
			return false
		}
	}
	return true
}

// dispatchLocked hands waiting requests of qid to its free entries.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) dispatchLocked(qid int) {
	q := &fk.qs[qid]
	for len(q.avail) > 0 && len(q.waiting) > 0 {
		e, req := q.avail[0], q.waiting[0]
		q.avail, q.waiting = q.avail[1:], q.waiting[1:]
		fk.sendLocked(e, req)
	}
}

// sendLocked copies req into e as fuse_uring_copy_to_ring does and
// completes e's command.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) sendLocked(e *fakeEnt, req *fakeReq) {
	e.req = req
	fk.inflight[req.unique] = req
	*(*fuse.InHeader)(unsafe.Pointer(&e.hdr[hdrInOut])) = fuse.InHeader{
		Length: uint32(inHeaderSize + len(req.opIn) + len(req.payload)), Opcode: req.op,
		Unique: req.unique, NodeId: req.nodeid}
	copy(e.hdr[hdrOpIn:hdrEntInOut], req.opIn)
	copy(e.payload, req.payload)
	*(*entInOut)(unsafe.Pointer(&e.hdr[hdrEntInOut])) = entInOut{commitID: req.unique, payloadSz: uint32(len(req.payload))}
	fk.postLocked(e.ring, e.ud, 0)
}

// commitLocked is FUSE_IO_URING_CMD_COMMIT_AND_FETCH: the reply in
// entry ud goes to the request's maker, and the entry takes the qid's
// oldest waiting request or becomes free.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) commitLocked(r *fakeRing, ud uint64, qid int, commitID uint64) {
	e := r.ents[ud]
	switch {
	case e == nil || e.released:
		fk.errorfLocked("ring %d: commit of entry %d, which is not registered", r.fd, ud)
		fk.postLocked(r, ud, -int32(unix.ENOENT))
		return
	case e.req == nil:
		fk.errorfLocked("ring %d: commit of entry %d (qid %d), which holds no request", r.fd, ud, e.qid)
		fk.postLocked(r, ud, -int32(unix.ENOENT))
		return
	case qid != e.qid || commitID != e.req.unique:
		fk.errorfLocked("ring %d: commit of entry %d as qid %d unique %d, it holds qid %d unique %d", r.fd, ud, qid, commitID, e.qid, e.req.unique)
		fk.postLocked(r, ud, -int32(unix.ENOENT))
		return
	}
	req := e.req
	e.req = nil
	delete(fk.inflight, req.unique)
	oh := *(*fuse.OutHeader)(unsafe.Pointer(&e.hdr[hdrInOut]))
	eio := *(*entInOut)(unsafe.Pointer(&e.hdr[hdrEntInOut]))
	switch {
	case oh.Unique != req.unique:
		fk.errorfLocked("qid %d: reply to %d carries unique %d", qid, req.unique, oh.Unique)
	case oh.Status > 0:
		fk.errorfLocked("qid %d: reply to %d has positive error %d", qid, req.unique, oh.Status)
	case int(eio.payloadSz) > len(e.payload) || oh.Length != outHeaderSize+eio.payloadSz:
		fk.errorfLocked("qid %d: reply to %d: length %d, payload %d", qid, req.unique, oh.Length, eio.payloadSz)
	default:
		fk.answerLocked(req, fakeReply{unique: oh.Unique, status: oh.Status, payload: slices.Clone(e.payload[:eio.payloadSz])})
	}
	q := &fk.qs[e.qid]
	q.avail = append(q.avail, e)
	fk.dispatchLocked(e.qid)
	fk.changed.Broadcast()
}

// answerLocked gives req's maker its reply, once.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) answerLocked(req *fakeReq, rep fakeReply) {
	if req.reply != nil {
		req.reply <- rep
		req.reply = nil
	}
}

// postLocked posts a completion to r, or keeps it in r's overflow list
// while the CQ is full, and wakes r's waiter.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) postLocked(r *fakeRing, ud uint64, res int32) {
	if r.dead {
		return
	}
	r.overflow = append(r.overflow, cqe{userData: ud, res: res})
	fk.flushLocked(r)
	var one = [8]byte{1}
	unix.Write(r.notify, one[:])
}

// flushLocked moves overflowed completions into r's CQ as far as it has
// room.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) flushLocked(r *fakeRing) {
	tail := *word(r.cq, fakeTail) // only the fake writes it, under mu
	for len(r.overflow) > 0 && tail-atomic.LoadUint32(word(r.cq, fakeHead)) < r.cqEntries {
		*(*cqe)(unsafe.Pointer(&r.cq[fakeArray+cqeSize*int(tail&(r.cqEntries-1))])) = r.overflow[0]
		r.overflow = r.overflow[1:]
		tail++
		atomic.StoreUint32(word(r.cq, fakeTail), tail)
	}
}

// pollLocked completes r's pending polls whose fds are ready.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) pollLocked(r *fakeRing) {
	if len(r.polls) == 0 {
		return
	}
	fds := make([]unix.PollFd, len(r.polls))
	for i, p := range r.polls {
		fds[i] = unix.PollFd{Fd: p.fd, Events: int16(p.events)}
	}
	for {
		if _, err := unix.Poll(fds, 0); err != unix.EINTR {
			break
		}
	}
	kept := r.polls[:0]
	for i, p := range r.polls {
		switch rev := fds[i].Revents; {
		case rev&unix.POLLNVAL != 0:
			fk.postLocked(r, p.ud, -int32(unix.EBADF))
		case rev != 0:
			fk.postLocked(r, p.ud, int32(rev))
		default:
			kept = append(kept, p)
		}
	}
	r.polls = kept
}

// request injects a request on qid, as a task on that CPU would: op with
// its fixed in-struct opIn (without the fuse_in_header) and payload (a
// name, write data). It returns the request's unique; the reply comes
// on the channel.
func (fk *fakeKernel) request(qid int, op uint32, nodeid uint64, opIn, payload []byte) (uint64, <-chan fakeReply) {
	uniques, replies := fk.requests(qid, op, []uint64{nodeid}, opIn, payload)
	return uniques[0], replies[0]
}

// requests injects one request on qid for each node, all at once: no
// entry is registered or committed between them.
func (fk *fakeKernel) requests(qid int, op uint32, nodeids []uint64, opIn, payload []byte) ([]uint64, []<-chan fakeReply) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	var uniques []uint64
	var replies []<-chan fakeReply
	for _, nodeid := range nodeids {
		fk.unique += 2 // the kernel keeps the low bit for INTERRUPT
		req := &fakeReq{unique: fk.unique, qid: qid, op: op, nodeid: nodeid, opIn: opIn, payload: payload,
			reply: make(chan fakeReply, 1)}
		uniques, replies = append(uniques, req.unique), append(replies, req.reply)
		if fk.ended {
			fk.answerLocked(req, fakeReply{unique: req.unique, status: -int32(unix.ENOTCONN)})
			continue
		}
		// As fuse_uring_queue_fuse_req: a free entry takes the new
		// request even while older ones wait (for a commit to fetch
		// them).
		q := &fk.qs[qid]
		if fk.ready && len(q.avail) > 0 {
			e := q.avail[0]
			q.avail = q.avail[1:]
			fk.sendLocked(e, req)
		} else {
			q.waiting = append(q.waiting, req)
		}
	}
	fk.changed.Broadcast()
	return uniques, replies
}

// end ends the connection as fuse_abort_conn does: every free entry's
// command completes with -ENOTCONN, every request not answered yet ends
// with -ECONNABORTED, and every later command completes at once with
// -ENOTCONN.
func (fk *fakeKernel) end() {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	fk.ended = true
	for qid := range fk.qs {
		q := &fk.qs[qid]
		for _, e := range q.avail {
			e.released = true
			fk.postLocked(e.ring, e.ud, -int32(unix.ENOTCONN))
		}
		for _, req := range q.waiting {
			fk.answerLocked(req, fakeReply{unique: req.unique, status: -int32(unix.ECONNABORTED)})
		}
		q.avail, q.waiting = nil, nil
	}
	for _, req := range fk.inflight {
		fk.answerLocked(req, fakeReply{unique: req.unique, status: -int32(unix.ECONNABORTED)})
	}
	fk.changed.Broadcast()
}

// waitFor waits until cond, called with fk.mu held, is true, and fails
// the test if it is not within d; what describes the condition.
func (fk *fakeKernel) waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	timedOut := false
	timer := time.AfterFunc(d, func() {
		fk.mu.Lock()
		timedOut = true
		fk.changed.Broadcast()
		fk.mu.Unlock()
	})
	defer timer.Stop()
	fk.mu.Lock()
	defer fk.mu.Unlock()
	for !cond() {
		if timedOut {
			t.Fatalf("fake kernel: %s: not within %v\n%s", what, d, fk.stateLocked())
		}
		fk.changed.Wait()
	}
}

// stateLocked describes the qids that have waiting requests or hold
// some, for a failure message.
// Preconditions: fk.mu is held.
func (fk *fakeKernel) stateLocked() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ready %v, ended %v, %d rings, %d requests held by entries\n", fk.ready, fk.ended, len(fk.rings), len(fk.inflight))
	held := map[int]int{}
	for _, req := range fk.inflight {
		held[req.qid]++
	}
	for qid, q := range fk.qs {
		if len(q.waiting) > 0 || held[qid] > 0 || len(q.avail) == 0 {
			fmt.Fprintf(&b, "qid %d: %d free, %d waiting, %d held, %d registered\n", qid, len(q.avail), len(q.waiting), held[qid], q.registered)
		}
	}
	return b.String()
}

// threads is the number of distinct threads that entered any ring.
func (fk *fakeKernel) threads() int {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	all := map[int]bool{}
	for _, ts := range fk.tids {
		for tid := range ts {
			all[tid] = true
		}
	}
	return len(all)
}

// qidsByRing returns, for every ring that registered entries, the qids
// it registered, sorted, and checks that no qid registered on two rings.
func (fk *fakeKernel) qidsByRing(t *testing.T) map[int][]int {
	t.Helper()
	fk.mu.Lock()
	defer fk.mu.Unlock()
	out := map[int][]int{}
	for qid, q := range fk.qs {
		if len(q.rings) != 1 {
			t.Errorf("qid %d registered on %d rings, want 1", qid, len(q.rings))
		}
		for fd := range q.rings {
			out[fd] = append(out[fd], qid)
		}
	}
	for _, qids := range out {
		sort.Ints(qids)
	}
	return out
}

// registered is the number of REGISTERs each qid made.
func (fk *fakeKernel) registered() []int {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	out := make([]int, len(fk.qs))
	for i, q := range fk.qs {
		out[i] = q.registered
	}
	return out
}

var _ kernelEnd = (*fakeKernel)(nil)

// errnoStatus is a reply status as an error, nil for OK.
func errnoStatus(st int32) error {
	if st == 0 {
		return nil
	}
	return syscall.Errno(-st)
}
