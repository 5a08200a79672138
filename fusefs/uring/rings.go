package uring

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ringSet is the rings serving one FUSE connection's per-CPU queues.
type ringSet struct {
	queues   []*queue   // immutable after startRings
	handler  *handler   // shared by every queue; immutable
	register chan bool  // one value per queue: register (true) or give up
	results  chan error // one per queue that was told to register
	done     chan struct{}
	onFatal  func(error)
	fatalOne sync.Once // onFatal is called for the first failing queue only
	stopOnce sync.Once
	endOnce  sync.Once

	fdMu      sync.Mutex
	fdsClosed bool // the queues' stop eventfds are closed; protected by fdMu
}

// startRings makes g.rings rings for g.queues FUSE queues (qid q on ring
// q mod g.rings) of the /dev/fuse connection devFD
// and returns once every queue thread has its ring and buffers, or with
// the first error (having released what was made). The queues do
// nothing until register. onFatal is called from a queue thread whose
// ring fails while serving; the connection must then be aborted, since
// that CPU's requests can no longer be answered.
func startRings(h *handler, devFD int, g geometry, onFatal func(error)) (*ringSet, error) {
	rs := &ringSet{
		handler: h, register: make(chan bool, g.rings), results: make(chan error, g.rings),
		done: make(chan struct{}), onFatal: onFatal,
	}
	setup := make(chan error, g.rings)
	if g.holdP {
		addProcs(g.rings)
	}
	var wg sync.WaitGroup
	var err error
	for id := range g.rings {
		q := &queue{id: id, qids: qidsOf(id, g), depth: g.depth, maxEnts: g.maxEnts, payload: g.payload, devFD: devFD, handler: h,
			holdP: g.holdP, deferTW: g.deferTW}
		q.threads, q.fatal, q.gone = &wg, rs.fail, make(chan struct{})
		if q.stopFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
			err = fmt.Errorf("eventfd: %w", err)
			break
		}
		rs.queues = append(rs.queues, q)
		wg.Add(1)
		go func() { defer wg.Done(); q.run(setup, rs.register, rs.results) }()
	}
	stopWatch := make(chan struct{})
	go rs.watch(stopWatch)
	go func() {
		wg.Wait()
		close(stopWatch)
		rs.closeStopFDs()
		if g.holdP {
			releaseProcs(g.rings)
		}
		close(rs.done)
	}()
	for range rs.queues {
		err = errors.Join(err, <-setup)
	}
	if err != nil {
		rs.abandon()
		return nil, err
	}
	return rs, nil
}

// registerWait bounds how long the queues may take to register.
const registerWait = 5 * time.Second

// registerAll hands every queue's entries to the kernel; call it from
// RawFileSystem.Init, after the INIT reply, once the kernel has agreed
// to io_uring. When it returns nil the ring is ready and every request
// but FORGET and INTERRUPT arrives on the queues. When it fails the
// kernel has fallen back to /dev/fuse for this connection; the queues
// that did register stay idle until the connection ends.
func (rs *ringSet) registerAll(devFD int) error {
	for range rs.queues {
		rs.register <- true
	}
	var err error
	timeout := time.After(registerWait)
	for range rs.queues {
		select {
		case e := <-rs.results:
			err = errors.Join(err, e)
		case <-timeout:
			err = errors.Join(err, fmt.Errorf("a queue did not register within %v", registerWait))
			poison(devFD)
			return err
		}
	}
	return err
}

// abandon releases queues that were never told to register (the mount
// or INIT failed, or the kernel did not offer io_uring).
func (rs *ringSet) abandon() {
	for range rs.queues {
		rs.register <- false
	}
}

// poison sends a malformed REGISTER from a ring of its own: the kernel
// refuses it and, as for any refused REGISTER before the ring is ready,
// serves the connection over /dev/fuse from then on.
func poison(devFD int) {
	r, err := newRing(1, false)
	if err != nil {
		return
	}
	defer r.close()
	s := r.next()
	s.opcode, s.fd, s.cmdOp, s.len = opUringCmd, int32(devFD), cmdRegister, 1
	r.push()
	r.submit()
}

// stop ends every queue's loop at once, without waiting for the kernel
// to release the entries. Use it only when no request can arrive any
// more (the connection has ended) or none ever reached the queues.
func (rs *ringSet) stop() {
	rs.stopOnce.Do(func() {
		rs.fdMu.Lock()
		defer rs.fdMu.Unlock()
		if rs.fdsClosed {
			return // every queue thread has ended
		}
		for _, q := range rs.queues {
			q.stop()
		}
	})
}

// end is called once the connection has ended (go-fuse's /dev/fuse loop
// returned: the kernel aborted or unmounted it). Every request still
// being served is cancelled, as go-fuse cancels its own, and the queues
// stop: a handler that waits for its cancellation (go-fuse's TestAbort)
// returns, and no queue waits for entries its handlers still hold, which
// the kernel no longer answers for.
func (rs *ringSet) end() {
	rs.endOnce.Do(func() {
		for _, q := range rs.queues {
			q.cancelAll()
		}
		rs.stop()
	})
}

// fail reports a queue that failed while serving.
func (rs *ringSet) fail(err error) {
	rs.fatalOne.Do(func() { rs.onFatal(err) })
}

func (rs *ringSet) closeStopFDs() {
	rs.fdMu.Lock()
	defer rs.fdMu.Unlock()
	for _, q := range rs.queues {
		unix.Close(q.stopFD)
	}
	rs.fdsClosed = true
}

// handoffs returns how many times a blocked handler's lead was taken, and
// how many entries were registered beyond the first, over every queue.
func (rs *ringSet) handoffs() (taken, grown uint64) {
	for _, q := range rs.queues {
		taken += q.handoffs.Load()
		grown += q.grown.Load()
	}
	return taken, grown
}

// qidsOf is the FUSE queues ring id serves: id, id+g.rings, ...
func qidsOf(id int, g geometry) []qidOf {
	qids := make([]qidOf, 0, (g.queues-id+g.rings-1)/g.rings)
	for qid := id; qid < g.queues; qid += g.rings {
		qids = append(qids, qidOf{qid: qid})
	}
	return qids
}

// served returns the number of requests each ring has answered.
func (rs *ringSet) served() []uint64 {
	out := make([]uint64, len(rs.queues))
	for i, q := range rs.queues {
		out[i] = q.served.Load()
	}
	return out
}

// PossibleCPUs is the kernel's num_possible_cpus(): the number of queues
// the kernel expects, all of which must register before it uses any.
func PossibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, fmt.Errorf("possible CPUs: %w", err)
	}
	return parseCPUList(string(b))
}

// parseCPUList is the number of CPUs up to the highest in a kernel CPU
// list ("0-3,8-11" is 12: the kernel numbers queues by CPU).
func parseCPUList(s string) (int, error) {
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return 0, fmt.Errorf("possible CPUs: cannot parse %q", s)
		}
		n = max(n, z+1)
	}
	return n, nil
}
