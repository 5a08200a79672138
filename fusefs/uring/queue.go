package uring

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
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

// queue is one per-CPU FUSE queue: an io_uring, depth ring entries whose
// header pages and payloads live in one anonymous mapping outside the Go
// heap, and the OS thread, pinned to the queue's CPU, that owns them.
// Every field but served is used by that thread only.
type queue struct {
	id      int
	depth   int
	payload int // bytes of payload per entry
	devFD   int
	handler *handler
	ring    *ring
	ringFD  int       // ring.fd, immutable after setup (teardown clears ring); for tests
	mem     []byte    // depth × (hdrPage + payload); the kernel writes into it
	scratch []scratch // per entry; used by whoever serves it (this thread, or a deferred request's goroutine)
	stopFD  int       // eventfd, owned by the ringSet; a write ends the loop
	live    int       // entries the kernel has not released
	stopped bool      // the stop eventfd fired
	failed  error     // the first REGISTER the kernel refused
	holdP   bool      // a busy queue waits holding its P (Config.KeepGOMAXPROCS unset)
	deferTW bool      // the ring defers task work to this thread's waits (Config.DeferTaskRun)

	// WRITE and SETATTR are served on goroutines of their own (see
	// serveAsync): a store may block (delete_device waits a grace period
	// under --gp normal), and the queue's other requests must not wait
	// for it.
	wakeFD   int            // eventfd: a deferred reply is ready; owned by the queue thread
	finished chan finished  // deferred replies ready to commit; capacity depth, so a send never blocks
	async    sync.WaitGroup // goroutines serving deferred requests; waited for before the buffers go

	// Shared with the interrupt watchdog (interrupt.go), on the queue's
	// own cache lines.
	serving atomic.Uint64 // unique of the request being served, 0 if none; | interruptedBit
	caller  atomic.Uint32 // its caller's thread id
	// cancel is the channel passed to the file system for the request
	// being served: closed by the watchdog only, replaced by the queue
	// thread (endRequest) once closed; accessed atomically.
	cancel atomic.Pointer[chan struct{}]
	served atomic.Uint64 // requests answered; read by Server.Served
	_      [64]byte      // keep these off the next queue's cache line
}

// setup pins the calling (locked) thread to the queue's CPU and makes the
// ring and the buffers (after pinning, so that first touch is CPU-local).
// The queue of a CPU that is possible but offline (EINVAL) stays
// unpinned: it gets requests only once the CPU comes online, and the
// kernel still needs it registered.
func (q *queue) setup() error {
	var set unix.CPUSet
	set.Set(q.id)
	if err := unix.SchedSetaffinity(0, &set); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("queue %d: pin to CPU %d: %w", q.id, q.id, err)
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
	q.ring.registerRing()
	if q.wakeFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		q.teardown()
		return fmt.Errorf("queue %d: eventfd: %w", q.id, err)
	}
	q.finished = make(chan finished, q.depth)
	q.scratch = make([]scratch, q.depth)
	size := q.depth * (hdrPage + q.payload)
	q.mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		q.teardown()
		return fmt.Errorf("queue %d: map %d bytes of ring buffers: %w", q.id, size, err)
	}
	return nil
}

// teardown releases the ring first (the kernel cancels what is still
// registered on it), then the buffers. The eventfd belongs to the
// ringSet, which closes it once every queue thread has ended.
func (q *queue) teardown() {
	q.async.Wait() // no goroutine writes into the buffers once they go
	if q.wakeFD > 0 {
		unix.Close(q.wakeFD)
		q.wakeFD = 0
	}
	if q.ring != nil {
		q.ring.close()
		q.ring = nil
	}
	if q.mem != nil {
		unix.Munmap(q.mem)
		q.mem = nil
	}
}

func (q *queue) header(e int) unsafe.Pointer {
	return unsafe.Pointer(&q.mem[e*(hdrPage+q.payload)])
}

func (q *queue) payloadOf(e int) []byte {
	off := e*(hdrPage+q.payload) + hdrPage
	return q.mem[off : off+q.payload : off+q.payload]
}

// registerShortfall is cut off the payload each REGISTER hands over; a
// test sets it to make the kernel refuse the queues. Read only while
// registering.
var registerShortfall = 0

// register hands every entry to the kernel and arms the stop poll. A
// REGISTER the kernel refuses completes at once with an error, which
// also makes the kernel fall back to /dev/fuse for the connection.
func (q *queue) register() error {
	for e := range q.depth {
		h := q.header(e)
		iov := (*[2]unix.Iovec)(unsafe.Add(h, hdrIovecs))
		p := q.payloadOf(e)
		iov[0] = unix.Iovec{Base: (*byte)(h), Len: hdrSize}
		iov[1] = unix.Iovec{Base: &p[0], Len: uint64(len(p) - registerShortfall)}
		s := q.cmd(e, cmdRegister)
		s.addr, s.len = uint64(uintptr(unsafe.Pointer(iov))), 2
		q.ring.push()
	}
	s := q.ring.next()
	s.opcode, s.fd, s.opFlags, s.userData = opPollAdd, int32(q.stopFD), unix.POLLIN, stopTag
	q.ring.push()
	q.armWake()
	q.live = q.depth
	for q.ring.pending() > 0 {
		if err := q.ring.submit(); err != nil {
			return fmt.Errorf("queue %d: %w", q.id, err)
		}
	}
	q.ring.reap(q.registered)
	return q.failed
}

// registered handles a completion that arrives while registering: a
// refusal, or already a request (the last queue to register makes the
// ring ready).
func (q *queue) registered(ud uint64, res int32) {
	if res < 0 && ud != stopTag && ud != wakeTag && q.failed == nil {
		q.live--
		q.failed = fmt.Errorf("queue %d: FUSE_IO_URING_CMD_REGISTER: %w", q.id, syscall.Errno(-res))
		return
	}
	q.complete(ud, res)
}

// cmd starts a URING_CMD SQE for entry e, on /dev/fuse as the ring's
// fixed file 0.
func (q *queue) cmd(e int, op uint32) *sqe {
	s := q.ring.next()
	s.opcode, s.flags, s.fd, s.cmdOp, s.userData = opUringCmd, sqeFixedFile, 0, op, uint64(e)
	(*cmdReq)(unsafe.Pointer(&s.cmd[0])).qid = uint16(q.id)
	return s
}

// loop serves requests until the kernel has released every entry (the
// connection ended) or the stop eventfd fires. Each turn is one
// io_uring_enter: it commits the replies of the last turn, which also
// fetches the next requests, and waits for at least one.
//
// A queue that had work waits for more holding its P (ring.wait); one
// whose wait ended with nothing (the runtime preempted it after 10 ms, or
// another signal came) waits in a plain blocking system call until its
// next request, so that an idle queue holds no P.
func (q *queue) loop() error {
	holdP := q.holdP
	for q.live > 0 && !q.stopped {
		if err := q.ring.wait(holdP); err != nil {
			return fmt.Errorf("queue %d: %w", q.id, err)
		}
		holdP = q.ring.reap(q.complete) > 0 && q.holdP
	}
	return nil
}

// complete handles one CQE: a request to serve, a command to repeat, or
// the kernel releasing the entry.
func (q *queue) complete(ud uint64, res int32) {
	switch {
	case ud == stopTag:
		q.stopped = true
	case ud == wakeTag:
		q.commitFinished(res >= 0)
	case res == 0 && deferred(q.opcode(int(ud))):
		q.serveAsync(int(ud))
	case res == 0:
		unique := q.serve(int(ud))
		q.commit(int(ud), unique)
	case res == -int32(syscall.EINTR) || res == -int32(syscall.EAGAIN):
		q.commit(int(ud), (*entInOut)(unsafe.Add(q.header(int(ud)), hdrEntInOut)).commitID)
	default: // ENOTCONN, ECONNABORTED, ECANCELED: the connection ended
		q.live--
	}
}

// commit sends entry e's reply and fetches its next request.
func (q *queue) commit(e int, unique uint64) {
	s := q.cmd(e, cmdCommitAndFetch)
	(*cmdReq)(unsafe.Pointer(&s.cmd[0])).commitID = unique
	q.ring.push()
}

// serve answers the request in entry e in place and returns its unique.
func (q *queue) serve(e int) uint64 {
	in := q.copyHeader(e)
	q.beginRequest(in.Unique, in.Pid)
	unique := q.answer(e, in, *q.cancel.Load())
	q.endRequest()
	return unique
}

// copyHeader copies entry e's in-header where the reply cannot overwrite
// it and returns the copy.
func (q *queue) copyHeader(e int) *fuse.InHeader {
	h := q.header(e)
	copy(unsafe.Slice((*byte)(unsafe.Add(h, hdrInCopy)), inHeaderSize), unsafe.Slice((*byte)(h), inHeaderSize))
	return (*fuse.InHeader)(unsafe.Add(h, hdrInCopy))
}

// opcode is the opcode of the request in entry e.
func (q *queue) opcode(e int) uint32 { return (*fuse.InHeader)(q.header(e)).Opcode }

// answer dispatches the request in entry e and writes its reply in place.
func (q *queue) answer(e int, in *fuse.InHeader, cancel <-chan struct{}) uint64 {
	h := q.header(e)
	ent := (*entInOut)(unsafe.Add(h, hdrEntInOut))
	unique := in.Unique
	if q.handler.debug != nil {
		logRequest(q.handler.debug, q.id, in, q.payloadOf(e)[:ent.payloadSz])
	}
	n, st := q.handler.dispatch(in, cancel, q.payloadOf(e), int(ent.payloadSz), &q.scratch[e])
	if st != fuse.OK {
		n = 0
	}
	if q.handler.debug != nil {
		logReply(q.handler.debug, in, st, n)
	}
	*(*fuse.OutHeader)(h) = fuse.OutHeader{Length: uint32(outHeaderSize + n), Status: -int32(st), Unique: unique}
	ent.payloadSz = uint32(n)
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
// queue thread never does, so no tree writer ever runs on it.
func deferred(op uint32) bool { return op == opWrite || op == opSetattr }

// finished is a deferred request whose reply is in its entry.
type finished struct {
	entry  int
	unique uint64
}

// serveAsync serves the request in entry e on a goroutine of its own,
// which writes the reply in place (the kernel leaves an entry alone until
// it is committed) and wakes the queue thread to commit it. The watchdog
// does not see such a request: a signal to its caller does not cancel it.
func (q *queue) serveAsync(e int) {
	in := q.copyHeader(e)
	q.async.Add(1)
	go func() {
		defer q.async.Done()
		q.handler.limit.acquire()
		unique := q.answer(e, in, nil)
		q.handler.limit.release()
		q.finished <- finished{e, unique}
		var one = [8]byte{1}
		unix.Write(q.wakeFD, one[:])
	}()
}

// commitFinished commits every deferred reply that is ready and, if
// rearm (the poll did not fail), re-arms the wake poll: after draining,
// so that a reply finished meanwhile finds the eventfd readable and fires
// the new poll.
func (q *queue) commitFinished(rearm bool) {
	var buf [8]byte
	unix.Read(q.wakeFD, buf[:])
	for {
		select {
		case f := <-q.finished:
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

// run is the queue's thread: set up, wait to be told to register, serve
// until the connection ends, tear down. The goroutine never unlocks its
// thread, so the thread (and its CPU affinity) ends with it.
func (q *queue) run(setup chan<- error, register <-chan bool, registered chan<- error, fatal func(error)) {
	runtime.LockOSThread()
	if err := q.setup(); err != nil {
		setup <- err
		return
	}
	setup <- nil
	if !<-register {
		q.teardown()
		return
	}
	err := q.register()
	registered <- err
	if err == nil || q.live > 0 {
		if err := q.loop(); err != nil && !errors.Is(err, syscall.EBADF) {
			fatal(err)
		}
	}
	q.teardown()
}
