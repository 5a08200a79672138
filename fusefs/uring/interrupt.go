package uring

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// The kernel does not route FUSE INTERRUPT to requests it sent over a
// ring: it sends INTERRUPT on /dev/fuse, where nothing knows the request,
// and drops it. So the queues make the same decision themselves: a
// request that is still being served after one watchdog period, whose
// caller has a signal pending (what makes the kernel send INTERRUPT), has
// its cancel channel closed. A client killed in a hanging read thus ends
// the read over io_uring as over /dev/fuse.

// interruptedBit marks a queue's serving word once the watchdog has
// closed its cancel channel. FUSE uniques are even (the kernel keeps the
// low bit for INTERRUPT replies), so the bit is free.
const interruptedBit = 1

// watchPeriod is how long a request runs before its caller is checked.
const watchPeriod = 10 * time.Millisecond

// begin publishes the request w's thread starts serving inline.
func (w *worker) begin(unique uint64, pid uint32) {
	w.caller.Store(pid)
	w.serving.Store(unique)
}

// end clears it, and replaces the cancel channel if the watchdog closed
// it.
func (w *worker) end() {
	if w.serving.Swap(0)&interruptedBit != 0 {
		w.cancel.Store(new(make(chan struct{})))
	}
}

// watch runs until done: every watchPeriod it interrupts requests whose
// callers have a signal pending, and takes the lead from handlers that
// have held it a whole period (handoff.go).
func (rs *ringSet) watch(done <-chan struct{}) {
	tick := time.NewTicker(watchPeriod)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		for _, q := range rs.queues {
			q.watch()
		}
	}
}

// watch is one tick of the watchdog over q's threads.
func (q *queue) watch() {
	ws := q.workers.Load()
	if ws == nil {
		return
	}
	leader := q.leader.Load()
	for _, w := range *ws {
		// The channel is loaded after serving read u and before the
		// CAS: it is replaced only by the end of a request whose bit was
		// set, which comes before u began, so a CAS that succeeds proves
		// it is u's.
		u := w.serving.Load()
		cancel := w.cancel.Load()
		same := u != 0 && u&^interruptedBit == w.seen
		w.seen = u &^ interruptedBit
		if same && u&interruptedBit == 0 && signalPending(w.caller.Load()) &&
			w.serving.CompareAndSwap(u, u|interruptedBit) {
			close(*cancel)
		}
		if same && w == leader && !q.deferTW && q.lead.Load()&leadState == leadServing {
			q.takeOver()
		}
	}
}

// signalPending reports whether thread tid has an unblocked signal (or
// SIGKILL) pending, from /proc/<tid>/status.
func signalPending(tid uint32) bool {
	if tid == 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return false // gone: nothing waits for the answer any more
	}
	var pnd, shd, blk uint64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		x, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			continue
		}
		switch k {
		case "SigPnd":
			pnd = x
		case "ShdPnd":
			shd = x
		case "SigBlk":
			blk = x
		}
	}
	const sigkill = 1 << (9 - 1)
	p := pnd | shd
	return p&sigkill != 0 || p&^blk != 0
}
