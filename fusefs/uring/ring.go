package uring

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring ABI (include/uapi/linux/io_uring.h). golang.org/x/sys has only
// the syscall numbers.
const (
	setupCQSize       = 1 << 3
	setupSubmitAll    = 1 << 7
	setupSQE128       = 1 << 10
	setupSingleIssuer = 1 << 12
	setupDeferTaskRun = 1 << 13

	featSingleMmap = 1 << 0

	enterGetEvents      = 1 << 0
	enterRegisteredRing = 1 << 4

	sqeFixedFile = 1 << 0 // IOSQE_FIXED_FILE: fd is an index into the registered files

	registerFiles   = 2  // IORING_REGISTER_FILES
	registerRingFDs = 20 // IORING_REGISTER_RING_FDS

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	opPollAdd  = 6
	opUringCmd = 46

	sqeSize = 128 // with setupSQE128
	cqeSize = 16
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// sqe is the first 48 bytes of a 128-byte submission queue entry; the
// command area follows at byte 48.
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	cmdOp       uint32 // off/addr2 for other opcodes
	pad1        uint32
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	fileIndex   uint32
	cmd         [80]byte
}

// cqe is a completion queue entry.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// ring is one io_uring instance: its fd and the three shared mappings.
// It is used by one thread at a time (the queue's leader; the lead passes
// with an atomic handshake, handoff.go), so nothing here is locked; the
// head and tail words shared with the kernel are accessed atomically.
type ring struct {
	fd      int
	sqMap   []byte
	cqMap   []byte // aliases sqMap with featSingleMmap
	sqeMap  []byte
	sqHead  *uint32 // written by the kernel
	sqTail  *uint32 // written by us
	sqMask  uint32
	sqSize  uint32
	sqArray unsafe.Pointer
	cqHead  *uint32 // written by us
	cqTail  *uint32 // written by the kernel
	cqMask  uint32
	cqes    unsafe.Pointer
	single  bool // one mapping holds the SQ and CQ rings
	// enterFD and enterFlags are what io_uring_enter is given: the
	// ring's registered index and enterRegisteredRing once registerRing
	// succeeded (the kernel then skips the fd table the process's threads
	// share), else the fd and no flag.
	enterFD    uintptr
	enterFlags uintptr
}

// newRing sets up a ring of entries SQEs (128 bytes each) and twice as
// many CQEs, and maps it. With deferTW only the calling thread may submit
// to it, and the kernel runs its task work in that thread's waits
// (Config.DeferTaskRun).
func newRing(entries uint32, deferTW bool) (*ring, error) {
	p := params{flags: setupSQE128 | setupCQSize | setupSubmitAll, cqEntries: 2 * entries}
	if deferTW {
		p.flags |= setupSingleIssuer | setupDeferTaskRun
	}
	fd, errno := ringKernel.setup(entries, &p)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &ring{fd: fd, enterFD: uintptr(fd)}
	if err := r.mmap(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*cqeSize)
	r.single = p.features&featSingleMmap != 0
	if r.single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	flags := unix.MAP_SHARED | unix.MAP_POPULATE
	prot := unix.PROT_READ | unix.PROT_WRITE
	if r.sqMap, err = ringKernel.mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("mmap io_uring SQ ring: %w", err)
	}
	r.cqMap = r.sqMap
	if !r.single {
		if r.cqMap, err = ringKernel.mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("mmap io_uring CQ ring: %w", err)
		}
	}
	if r.sqeMap, err = ringKernel.mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, prot, flags); err != nil {
		return fmt.Errorf("mmap io_uring SQEs: %w", err)
	}
	sq, cq := unsafe.Pointer(&r.sqMap[0]), unsafe.Pointer(&r.cqMap[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqSize = p.sqEntries
	r.sqArray = unsafe.Add(sq, p.sqOff.array)
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Add(cq, p.cqOff.cqes)
	return nil
}

// registerFile registers fd as the ring's fixed file 0: an SQE that
// names it with IOSQE_FIXED_FILE skips the fd table.
func (r *ring) registerFile(fd int) error {
	fds := [1]int32{int32(fd)}
	_, errno := ringKernel.register(r.fd, registerFiles, unsafe.Pointer(&fds[0]), 1)
	if errno != 0 {
		return fmt.Errorf("io_uring_register(IORING_REGISTER_FILES): %w", errno)
	}
	return nil
}

// registerRingFD is whether queue threads register their ring's fd; a
// test clears it to break a ring by replacing its fd, which a registered
// ring would not notice. Read only while setting up.
var registerRingFD = true

// rsrcUpdate is struct io_uring_rsrc_update.
type rsrcUpdate struct {
	offset uint32
	resv   uint32
	data   uint64
}

// registerRing registers the ring's fd with the calling thread's
// io_uring context, so that the thread's io_uring_enter calls skip the
// fd table, and returns what that thread gives io_uring_enter: the
// registered index and enterRegisteredRing, or, where the kernel refuses
// (before Linux 5.18), the plain fd and no flag. A registration belongs
// to its thread: each thread that leads the ring calls it once.
func (r *ring) registerRing() (fd, flags uintptr) {
	if !registerRingFD {
		return uintptr(r.fd), 0
	}
	u := rsrcUpdate{offset: ^uint32(0), data: uint64(r.fd)}
	n, errno := ringKernel.register(r.fd, registerRingFDs, unsafe.Pointer(&u), 1)
	if errno == 0 && n == 1 {
		return uintptr(u.offset), enterRegisteredRing
	}
	return uintptr(r.fd), 0
}

// close unmaps the ring and closes its fd; the kernel then cancels every
// command still pending on it.
func (r *ring) close() {
	if r.sqeMap != nil {
		ringKernel.munmap(r.sqeMap)
	}
	if r.cqMap != nil && !r.single {
		ringKernel.munmap(r.cqMap)
	}
	if r.sqMap != nil {
		ringKernel.munmap(r.sqMap)
	}
	r.sqeMap, r.cqMap, r.sqMap = nil, nil, nil
	if r.fd >= 0 {
		ringKernel.close(r.fd)
		r.fd = -1
	}
}

// next returns a zeroed SQE at the tail, to be published by push. A
// full submission queue is submitted first: a queue that has grown has
// more entries than its ring has SQEs.
func (r *ring) next() *sqe {
	for r.pending() == r.sqSize {
		if err := r.submit(); err != nil {
			break // the wait that follows reports it
		}
	}
	tail := *r.sqTail // only we write it
	idx := tail & r.sqMask
	s := (*sqe)(unsafe.Pointer(&r.sqeMap[int(idx)*sqeSize]))
	*s = sqe{}
	*(*uint32)(unsafe.Add(r.sqArray, 4*idx)) = idx
	return s
}

// push publishes the SQE that next returned.
func (r *ring) push() { atomic.StoreUint32(r.sqTail, *r.sqTail+1) }

// pending is the number of published SQEs the kernel has not consumed.
func (r *ring) pending() uint32 { return *r.sqTail - atomic.LoadUint32(r.sqHead) }

// submit submits every pending SQE without waiting.
func (r *ring) submit() error {
	return enterError(ringKernel.enter(r.enterFD, uintptr(r.pending()), 0, r.enterFlags, false))
}

// wait submits every pending SQE and blocks until at least one CQE is
// there, or a signal (EINTR) ends the wait early; the caller loops.
//
// With holdP the thread keeps its P while it waits, as in a raw system
// call: the Go runtime sees a running goroutine, not one in a system
// call, so its monitor (sysmon) never retakes the P and never has to
// poll at its fastest rate to do so, and the thread needs no P when the
// request arrives. The monitor still preempts the goroutine after 10 ms
// on the same P (a signal, so the wait returns EINTR), which is what lets
// a garbage collection stop it. Without holdP the wait is a plain
// blocking system call, which the runtime may take the P from.
func (r *ring) wait(holdP bool) error {
	return enterError(ringKernel.enter(r.enterFD, uintptr(r.pending()), 1, r.enterFlags|enterGetEvents, holdP))
}

// enterError is io_uring_enter's errno as an error, nil for those after
// which the caller only has to call again.
func enterError(errno unix.Errno) error {
	switch errno {
	case 0, syscall.EINTR, syscall.EAGAIN, syscall.EBUSY:
		return nil
	}
	return fmt.Errorf("io_uring_enter: %w", errno)
}

// reap calls fn for every CQE there is, freeing each slot before the
// call, until fn returns false; it returns how many it took. A CQE is
// taken once: after a false, the next reap (by whichever thread leads the
// ring then) starts at the one after.
func (r *ring) reap(fn func(userData uint64, res int32) bool) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for h := head; h != tail; h++ {
		c := (*cqe)(unsafe.Add(r.cqes, cqeSize*uintptr(h&r.cqMask)))
		ud, res := c.userData, c.res
		atomic.StoreUint32(r.cqHead, h+1)
		if !fn(ud, res) {
			return int(h + 1 - head)
		}
	}
	return int(tail - head)
}

// ringKernel is the kernel's end of every ring: the system calls, or a
// test's fake of io_uring and FUSE's commands on it (fakekernel_test.go),
// which serves hundreds of queues on a machine with two CPUs. Set only
// while no ring exists.
var ringKernel kernelEnd = sysKernel{}

// kernelEnd is what a ring asks of the kernel.
type kernelEnd interface {
	// setup is io_uring_setup: it fills p and returns the ring's fd.
	setup(entries uint32, p *params) (int, unix.Errno)
	// mmap maps the ring's part at offset (offSQRing, offCQRing,
	// offSQEs).
	mmap(fd int, offset int64, size, prot, flags int) ([]byte, error)
	munmap(b []byte)
	// enter is io_uring_enter; raw is whether the caller holds its P
	// through the wait (ring.wait).
	enter(fd, toSubmit, minComplete, flags uintptr, raw bool) unix.Errno
	// register is io_uring_register.
	register(fd int, op uintptr, arg unsafe.Pointer, n uintptr) (uintptr, unix.Errno)
	close(fd int)
}

// sysKernel is the real kernel.
type sysKernel struct{}

func (sysKernel) setup(entries uint32, p *params) (int, unix.Errno) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	return int(fd), errno
}

func (sysKernel) mmap(fd int, offset int64, size, prot, flags int) ([]byte, error) {
	return unix.Mmap(fd, offset, size, prot, flags)
}

func (sysKernel) munmap(b []byte) { unix.Munmap(b) }

func (sysKernel) enter(fd, toSubmit, minComplete, flags uintptr, raw bool) unix.Errno {
	var errno unix.Errno
	if raw {
		_, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, fd, toSubmit, minComplete, flags, 0, 0)
	} else {
		_, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, fd, toSubmit, minComplete, flags, 0, 0)
	}
	return errno
}

func (sysKernel) register(fd int, op uintptr, arg unsafe.Pointer, n uintptr) (uintptr, unix.Errno) {
	r, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), op, uintptr(arg), n, 0, 0)
	return r, errno
}

func (sysKernel) close(fd int) { unix.Close(fd) }
