package uring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

const (
	stopTag = ^uint64(0)     // user_data of the stop eventfd's poll
	wakeTag = ^uint64(0) - 1 // user_data of the wake eventfd's poll
)

// queue is one io_uring serving one or more of the kernel's per-CPU FUSE
// queues (qids: one per possible CPU, or several folded onto one ring by
// Config.Rings), its ring entries, whose header pages and payloads live
// in anonymous mappings outside the Go heap, and the OS threads, pinned
// to its qids' CPUs, that serve them.
//
// One thread at a time leads the queue (handoff.go): only the leader
// enters the ring, reaps its completions and touches the fields marked
// "leader only". A thread stays leader while it serves a request inline;
// if the handler is still running after one watchdog period, the watchdog
// hands the lead to another thread, and the first thread, once its
// handler returns, hands its reply over like a deferred one.
type queue struct {
	id      int     // the ring's index
	qids    []qidOf // the FUSE queues it serves
	depth   int     // entries registered per qid at start
	maxEnts int     // entries a qid may grow to (see grow)
	payload int     // bytes of payload per entry
	devFD   int
	handler *handler
	ring    *ring
	ringFD  int  // ring.fd, immutable after setup (teardown clears ring); for tests
	holdP   bool // a busy queue waits holding its P (Config.HoldP)
	deferTW bool // the ring defers task work to its creator's waits (Config.DeferTaskRun): no handoff
	stopFD  int  // eventfd, owned by the ringSet; a write ends the loop

	// Leader only.
	ents    []*ringEntry // by user_data; grows, never shrinks
	maps    [][]byte     // the mappings behind ents, unmapped by teardown
	live    int          // entries the kernel has not released, over every qid
	stopped bool         // the stop eventfd fired
	failed  error        // the first REGISTER the kernel refused

	// Requests served off the leader: WRITE and SETATTR on goroutines of
	// their own (serveAsync; a store may block, as delete_device waits a
	// grace period under --gp normal), and inline requests whose thread
	// lost the lead. Their replies come back through finished and the
	// wake eventfd; the leader commits them.
	wakeFD   int           // eventfd: a reply served off the leader is ready
	finished chan finished // capacity maxEnts, so a send never blocks
	offLead  pending       // those requests still running; waited for before the buffers go

	handoff // the lead word and the queue's threads (handoff.go)

	// gone is closed when the connection has ended (ringSet.end): the
	// cancel channel of every request served on a goroutine of its own.
	gone chan struct{}

	served atomic.Uint64 // requests answered; read by Server.Served
	_      [64]byte      // keep these off the next queue's cache line
}

// qidOf is one FUSE queue of a ring.
type qidOf struct {
	qid  int
	ents int          // its entries; leader only
	live int          // its entries the kernel has not released; leader only
	busy atomic.Int32 // its entries held by requests served off the leader
}

// ringEntry is one ring entry: its header page and payload, in memory
// the kernel writes into, and its Go-side scratch.
type ringEntry struct {
	hdr     unsafe.Pointer // hdrPage bytes
	payload []byte
	qi      int // its qid's index in queue.qids
	sc      scratch
}

// setup pins the calling (locked) thread to the queue's CPU and makes the
// ring and the buffers (after pinning, so that first touch is CPU-local).
// The queue of a CPU that is possible but offline (EINVAL) stays
// unpinned: it gets requests only once the CPU comes online, and the
// kernel still needs it registered.
func (q *queue) setup(w *worker) error {
	if err := q.pin(); err != nil {
		return err
	}
	var err error
	if q.ring, err = newRing(uint32(q.depth+2), q.deferTW); err != nil {
		return fmt.Errorf("queue %d: %w", q.id, err)
	}
	q.ringFD = q.ring.fd
	if err := q.ring.registerFile(q.devFD); err != nil {
		q.teardown()
		return fmt.Errorf("queue %d: %w", q.id, err)
	}
	w.enterRing(q.ring)
	if q.wakeFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		q.teardown()
		return fmt.Errorf("queue %d: eventfd: %w", q.id, err)
	}
	q.finished = make(chan finished, q.maxEnts*len(q.qids))
	for qi := range q.qids {
		if err := q.addEntries(qi, q.depth); err != nil {
			q.teardown()
			return err
		}
	}
	return nil
}

// pin binds the calling thread to the CPUs of the queue's qids.
func (q *queue) pin() error {
	var set unix.CPUSet
	for i := range q.qids {
		set.Set(q.qids[i].qid)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("queue %d: pin to the CPUs of its qids: %w", q.id, err)
	}
	return nil
}

// addEntries maps n more entries for the qid q.qids[qi] and appends them
// to ents.
// Preconditions: the caller leads the queue.
func (q *queue) addEntries(qi, n int) error {
	size := n * (hdrPage + q.payload)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("queue %d: map %d bytes of ring buffers: %w", q.id, size, err)
	}
	q.maps = append(q.maps, mem)
	for i := range n {
		off := i * (hdrPage + q.payload)
		q.ents = append(q.ents, &ringEntry{hdr: unsafe.Pointer(&mem[off]), qi: qi,
			payload: mem[off+hdrPage : off+hdrPage+q.payload : off+hdrPage+q.payload]})
	}
	q.qids[qi].ents += n
	return nil
}

// teardown releases the ring first (the kernel cancels what is still
// registered on it), then the buffers, once no request served off the
// leader can write into them. The stop eventfd belongs to the ringSet,
// which closes it once every queue thread has ended.
func (q *queue) teardown() {
	q.offLead.wait()
	q.retire()
	if q.wakeFD > 0 {
		unix.Close(q.wakeFD)
		q.wakeFD = 0
	}
	if q.ring != nil {
		q.ring.close()
		q.ring = nil
	}
	for _, m := range q.maps {
		unix.Munmap(m)
	}
	q.maps, q.ents = nil, nil
}

// registerShortfall is cut off the payload each REGISTER hands over; a
// test sets it to make the kernel refuse the queues. Read only while
// registering.
var registerShortfall = 0

// register hands every entry to the kernel and arms the stop poll. A
// REGISTER the kernel refuses completes at once with an error, which
// also makes the kernel fall back to /dev/fuse for the connection.
func (q *queue) register(w *worker) error {
	for e := range q.ents {
		q.registerEntry(e)
	}
	s := q.ring.next()
	s.opcode, s.fd, s.opFlags, s.userData = opPollAdd, int32(q.stopFD), unix.POLLIN, stopTag
	q.ring.push()
	q.armWake()
	q.live = len(q.ents)
	for qi := range q.qids {
		q.qids[qi].live = q.qids[qi].ents
	}
	for q.ring.pending() > 0 {
		if err := q.ring.submit(); err != nil {
			return fmt.Errorf("queue %d: %w", q.id, err)
		}
	}
	q.ring.reap(func(ud uint64, res int32) bool { return q.registered(w, ud, res) })
	return q.failed
}

// registerEntry pushes entry e's REGISTER.
// Preconditions: the caller leads the queue.
func (q *queue) registerEntry(e int) {
	ent := q.ents[e]
	iov := (*[2]unix.Iovec)(unsafe.Add(ent.hdr, hdrIovecs))
	iov[0] = unix.Iovec{Base: (*byte)(ent.hdr), Len: hdrSize}
	iov[1] = unix.Iovec{Base: &ent.payload[0], Len: uint64(len(ent.payload) - registerShortfall)}
	s := q.cmd(e, cmdRegister)
	s.addr, s.len = uint64(uintptr(unsafe.Pointer(iov))), 2
	q.ring.push()
}

// registered handles a completion that arrives while registering: a
// refusal, or already a request (the last queue to register makes the
// ring ready).
func (q *queue) registered(w *worker, ud uint64, res int32) bool {
	if res < 0 && ud != stopTag && ud != wakeTag && q.failed == nil {
		q.release(int(ud))
		q.failed = fmt.Errorf("queue %d: FUSE_IO_URING_CMD_REGISTER: %w", q.id, syscall.Errno(-res))
		return true
	}
	return q.complete(w, ud, res)
}

// cmd starts a URING_CMD SQE for entry e, on /dev/fuse as the ring's
// fixed file 0.
func (q *queue) cmd(e int, op uint32) *sqe {
	s := q.ring.next()
	s.opcode, s.flags, s.fd, s.cmdOp, s.userData = opUringCmd, sqeFixedFile, 0, op, uint64(e)
	(*cmdReq)(unsafe.Pointer(&s.cmd[0])).qid = uint16(q.qids[q.ents[e].qi].qid)
	return s
}

// loop serves requests, as the queue's leader, until the kernel has
// released every entry (the connection ended) or the stop eventfd fires;
// it returns errLostLead if the watchdog gave the lead to another thread
// while w was serving. Each turn is one io_uring_enter: it commits the
// replies of the last turn, which also fetches the next requests, and
// waits for at least one.
//
// A queue that had work waits for more holding its P (ring.wait); one
// whose wait ended with nothing (the runtime preempted it after 10 ms, or
// another signal came) waits in a plain blocking system call until its
// next request, so that an idle queue holds no P.
func (q *queue) loop(w *worker) error {
	holdP := q.holdP
	lead := true
	for q.live > 0 && !q.stopped {
		q.grow()
		if err := q.ring.wait(holdP); err != nil {
			return fmt.Errorf("queue %d: %w", q.id, err)
		}
		n := q.ring.reap(func(ud uint64, res int32) bool {
			lead = q.complete(w, ud, res)
			return lead
		})
		if !lead {
			return errLostLead
		}
		holdP = n > 0 && q.holdP
	}
	return nil
}

// complete handles one CQE: a request to serve, a command to repeat, or
// the kernel releasing the entry. It returns false if w lost the lead
// while serving, and must not touch the ring again.
func (q *queue) complete(w *worker, ud uint64, res int32) bool {
	switch {
	case ud == stopTag:
		q.stopped = true
	case ud == wakeTag:
		q.commitFinished(res >= 0)
	case res == 0 && deferred(q.opcode(int(ud))):
		q.serveAsync(int(ud))
	case res == 0:
		return q.serveInline(w, int(ud))
	case res == -int32(syscall.EINTR) || res == -int32(syscall.EAGAIN):
		q.commit(int(ud), (*entInOut)(unsafe.Add(q.ents[ud].hdr, hdrEntInOut)).commitID)
	default: // ENOTCONN, ECONNABORTED, ECANCELED: the connection ended
		q.release(int(ud))
	}
	return true
}

// release counts entry e as released by the kernel.
// Preconditions: the caller leads the queue.
func (q *queue) release(e int) {
	q.live--
	q.qids[q.ents[e].qi].live--
}

// commit sends entry e's reply and fetches its next request.
// Preconditions: the caller leads the queue.
func (q *queue) commit(e int, unique uint64) {
	s := q.cmd(e, cmdCommitAndFetch)
	(*cmdReq)(unsafe.Pointer(&s.cmd[0])).commitID = unique
	q.ring.push()
}

// copyHeader copies ent's in-header where the reply cannot overwrite it
// and returns the copy.
func copyHeader(ent *ringEntry) *fuse.InHeader {
	copy(unsafe.Slice((*byte)(unsafe.Add(ent.hdr, hdrInCopy)), inHeaderSize), unsafe.Slice((*byte)(ent.hdr), inHeaderSize))
	return (*fuse.InHeader)(unsafe.Add(ent.hdr, hdrInCopy))
}

// opcode is the opcode of the request in entry e.
func (q *queue) opcode(e int) uint32 { return (*fuse.InHeader)(q.ents[e].hdr).Opcode }

// answer dispatches the request in ent and writes its reply in place.
func (q *queue) answer(ent *ringEntry, in *fuse.InHeader, cancel <-chan struct{}) uint64 {
	h := ent.hdr
	eio := (*entInOut)(unsafe.Add(h, hdrEntInOut))
	unique := in.Unique
	if q.handler.debug != nil {
		logRequest(q.handler.debug, q.qids[ent.qi].qid, in, ent.payload[:eio.payloadSz])
	}
	n, st := q.handler.dispatch(in, cancel, ent.payload, int(eio.payloadSz), &ent.sc)
	if st != fuse.OK {
		n = 0
	}
	if q.handler.debug != nil {
		logReply(q.handler.debug, in, st, n)
	}
	*(*fuse.OutHeader)(h) = fuse.OutHeader{Length: uint32(outHeaderSize + n), Status: -int32(st), Unique: unique}
	eio.payloadSz = uint32(n)
	// The kernel copies only the opcode's own in-struct next time: clear
	// the rest, so a shorter struct never reads this request's bytes.
	*(*[hdrEntInOut - hdrOpIn]byte)(unsafe.Add(h, hdrOpIn)) = [hdrEntInOut - hdrOpIn]byte{}
	q.served.Add(1)
	return unique
}

// deferred reports whether requests of opcode op are served off the
// queue thread: those that can change the tree. A writer may wait (a
// grace period, or the kernel's handling of the cache notifications it
// sends, which can wait for a lookup queued on this very queue); the
// leader never does, so no tree writer ever runs on it.
func deferred(op uint32) bool { return op == opWrite || op == opSetattr }

// finished is a reply served off the leader, in its entry.
type finished struct {
	entry  int
	unique uint64
}

// serveAsync serves the request in entry e on a goroutine of its own,
// which writes the reply in place (the kernel leaves an entry alone until
// it is committed) and hands it to the leader to commit. The watchdog
// does not see such a request: a signal to its caller does not cancel it,
// only the connection's end does (gone).
// Preconditions: the caller leads the queue.
func (q *queue) serveAsync(e int) {
	ent := q.ents[e]
	in := copyHeader(ent)
	q.qids[ent.qi].busy.Add(1)
	q.offLead.add()
	go func() {
		q.handler.limit.acquire()
		unique := q.answer(ent, in, q.gone)
		q.handler.limit.release()
		q.handBack(e, unique)
	}()
}

// handBack gives the leader a reply served off the lead, to commit.
func (q *queue) handBack(e int, unique uint64) {
	q.finished <- finished{e, unique}
	var one = [8]byte{1}
	unix.Write(q.wakeFD, one[:])
	q.offLead.done()
}

// commitFinished commits every reply served off the leader that is ready
// and, if rearm (the poll did not fail), re-arms the wake poll: after
// draining, so that a reply finished meanwhile finds the eventfd readable
// and fires the new poll.
// Preconditions: the caller leads the queue.
func (q *queue) commitFinished(rearm bool) {
	var buf [8]byte
	unix.Read(q.wakeFD, buf[:])
	for {
		select {
		case f := <-q.finished:
			q.qids[q.ents[f.entry].qi].busy.Add(-1)
			q.commit(f.entry, f.unique)
		default:
			if rearm && !q.stopped {
				q.armWake()
			}
			return
		}
	}
}

// armWake polls the wake eventfd (one shot).
func (q *queue) armWake() {
	s := q.ring.next()
	s.opcode, s.fd, s.opFlags, s.userData = opPollAdd, int32(q.wakeFD), unix.POLLIN, wakeTag
	q.ring.push()
}

// stop makes the loop return (failure paths and forced teardown).
func (q *queue) stop() {
	var one = [8]byte{1}
	unix.Write(q.stopFD, one[:])
}

// run is the queue's first thread: set up, wait to be told to register,
// serve until the connection ends, tear down. The goroutine never
// unlocks its thread, so the thread (and its CPU affinity) ends with it.
func (q *queue) run(setup chan<- error, register <-chan bool, registered chan<- error) {
	runtime.LockOSThread()
	w := q.newWorker()
	if err := q.setup(w); err != nil {
		setup <- err
		return
	}
	setup <- nil
	if !<-register {
		q.teardown()
		return
	}
	err := q.register(w)
	registered <- err
	if err == nil || q.live > 0 {
		q.serveLeading(w)
		return
	}
	q.teardown()
}

// isEBADF reports whether err is the EBADF of a ring whose fd a test
// replaced.
func isEBADF(err error) bool { return errors.Is(err, syscall.EBADF) }
