// Package uring serves a go-fuse fuse.RawFileSystem over FUSE-over-io_uring
// (Linux 6.14+): one queue per possible CPU, each an io_uring owned by an
// OS thread pinned to that CPU. The kernel queues a request issued on CPU c
// to queue c; its thread answers it in place and fetches the next one in
// the same io_uring_enter, so no lock is shared between queues and none is
// taken per request.
//
// go-fuse keeps what the rings do not carry: mounting, INIT (which
// negotiates io_uring), FORGET, INTERRUPT and notifications on /dev/fuse.
//
// Concurrency: each queue's ring, buffers and entry state are used by its
// thread only, but for the entry of a WRITE or SETATTR, which a goroutine
// of its own serves in place (a writer may block; the queue serves its
// other entries meanwhile) and hands back through the queue's finished
// channel and wake eventfd; the thread commits it. Shared between threads: queue.served
// and handler.polls (atomic), the Transport's channels, and each queue's
// stop eventfd (written by Stop, closed by the Transport after every
// queue thread has ended).
//
// Memory the kernel writes into (rings, header pages, payloads) is mapped
// outside the Go heap and holds no Go pointers; it is unmapped only after
// the kernel has released every entry (or never had one).
package uring

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Config configures a Transport.
type Config struct {
	Depth         int // ring entries per queue; 0 means DefaultDepth
	MaxWrite      int // the MaxWrite given to go-fuse: it sizes the payloads
	DisableXAttrs bool
	// Debug logs every request and reply to Logger, or to the standard
	// logger if Logger is nil, as go-fuse's MountOptions.Debug does.
	Debug  bool
	Logger *log.Logger
}

// DefaultDepth is the number of requests a queue can hold at once.
const DefaultDepth = 4

// Transport is a set of per-CPU queues serving one FUSE connection.
type Transport struct {
	queues   []*queue
	handler  *handler   // shared by every queue
	register chan bool  // one value per queue: register (true) or give up
	results  chan error // one per queue that was told to register
	done     chan struct{}
	onFatal  func(error)
	fatalOne sync.Once // onFatal is called for the first failing queue only
	stopOnce sync.Once
}

// Start makes one queue per possible CPU for the /dev/fuse connection
// devFD and returns once every queue thread has its ring and buffers, or
// with the first error (having released what was made). The queues do
// nothing until Register. onFatal, if not nil, is called from a queue
// thread whose ring fails while serving; the connection should then be
// aborted, since that CPU's requests can no longer be answered.
func Start(fs fuse.RawFileSystem, devFD int, cfg Config, onFatal func(error)) (*Transport, error) {
	cpus, err := PossibleCPUs()
	if err != nil {
		return nil, err
	}
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultDepth
	}
	t := &Transport{
		register: make(chan bool, cpus), results: make(chan error, cpus),
		done: make(chan struct{}), onFatal: onFatal,
	}
	h := &handler{fs: fs, xattrs: !cfg.DisableXAttrs}
	if cfg.Debug {
		h.debug = cfg.Logger
		if h.debug == nil {
			h.debug = log.Default()
		}
	}
	t.handler = h
	setup := make(chan error, cpus)
	var wg sync.WaitGroup
	for id := range cpus {
		q := &queue{id: id, depth: cfg.Depth, payload: payloadSize(cfg.MaxWrite), devFD: devFD, handler: h, cancel: make(chan struct{})}
		if q.stopFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
			err = fmt.Errorf("eventfd: %w", err)
			break
		}
		t.queues = append(t.queues, q)
		wg.Add(1)
		go func() { defer wg.Done(); q.run(setup, t.register, t.results, t.fail) }()
	}
	stopWatch := make(chan struct{})
	go t.watch(stopWatch)
	go func() { wg.Wait(); close(stopWatch); t.closeStopFDs(); close(t.done) }()
	for range t.queues {
		err = errors.Join(err, <-setup)
	}
	if err != nil {
		t.Abandon()
		return nil, err
	}
	return t, nil
}

// payloadSize is what the kernel requires of each entry's payload:
// max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages), in whole pages.
func payloadSize(maxWrite int) int {
	page := os.Getpagesize()
	pages := (maxWrite-1)/page + 1
	return max(minPayload, pages*page)
}

// Register hands every queue's entries to the kernel; call it from
// RawFileSystem.Init, after the INIT reply, once the kernel has agreed to
// io_uring. When it returns nil the ring is ready and every request but
// FORGET and INTERRUPT arrives on the queues. When it fails the kernel
// has fallen back to /dev/fuse for this connection; the queues that did
// register stay idle until the connection ends.
func (t *Transport) Register(devFD int) error {
	for range t.queues {
		t.register <- true
	}
	var err error
	timeout := time.After(5 * time.Second)
	for range t.queues {
		select {
		case e := <-t.results:
			err = errors.Join(err, e)
		case <-timeout:
			err = errors.Join(err, errors.New("a queue did not register within 5 s"))
			t.poison(devFD)
			return err
		}
	}
	return err
}

// Abandon releases queues that were never told to register (the mount or
// INIT failed, or the kernel did not offer io_uring).
func (t *Transport) Abandon() {
	for range t.queues {
		t.register <- false
	}
}

// poison sends a malformed REGISTER from a ring of its own: the kernel
// refuses it and, as for any refused REGISTER before the ring is ready,
// serves the connection over /dev/fuse from then on.
func (t *Transport) poison(devFD int) {
	r, err := newRing(1)
	if err != nil {
		return
	}
	defer r.close()
	s := r.next()
	s.opcode, s.fd, s.cmdOp, s.len = opUringCmd, int32(devFD), cmdRegister, 1
	r.push()
	r.enter(false)
}

// Stop ends every queue's loop at once, without waiting for the kernel
// to release the entries. Use it only when no request can arrive any
// more (the connection has ended) or none ever reached the queues.
func (t *Transport) Stop() {
	t.stopOnce.Do(func() {
		for _, q := range t.queues {
			q.stop()
		}
	})
}

// Done is closed when every queue thread has ended and released its ring
// and buffers: after the connection ends (unmount or abort), after Stop,
// or after a failed Start.
func (t *Transport) Done() <-chan struct{} { return t.done }

// fail reports a queue that failed while serving.
func (t *Transport) fail(err error) {
	if t.onFatal != nil {
		t.fatalOne.Do(func() { t.onFatal(err) })
	}
}

func (t *Transport) closeStopFDs() {
	for _, q := range t.queues {
		unix.Close(q.stopFD)
	}
}

// Queues is the number of queues (one per possible CPU).
func (t *Transport) Queues() int { return len(t.queues) }

// Depth is the number of ring entries per queue.
func (t *Transport) Depth() int {
	if len(t.queues) == 0 {
		return 0
	}
	return t.queues[0].depth
}

// Served returns the number of requests each queue has answered.
func (t *Transport) Served() []uint64 {
	out := make([]uint64, len(t.queues))
	for i, q := range t.queues {
		out[i] = q.served.Load()
	}
	return out
}

// Polls is the number of POLL requests the queues have answered (all
// with ENOSYS), the one a prime sends included. Once a POLL has been
// answered the kernel sends no more on the connection, so a count above
// one means a POLL reached the queues before the prime's answer did.
func (t *Transport) Polls() uint64 { return t.handler.polls.Load() }

// PossibleCPUs is the kernel's num_possible_cpus(): the number of queues
// the kernel expects, all of which must register before it uses any.
func PossibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, fmt.Errorf("possible CPUs: %w", err)
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return 0, fmt.Errorf("possible CPUs: cannot parse %q", b)
		}
		n = max(n, z+1)
	}
	return n, nil
}
