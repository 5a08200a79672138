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

// beginRequest publishes the request the queue thread starts serving.
func (q *queue) beginRequest(unique uint64, pid uint32) {
	q.caller.Store(pid)
	q.serving.Store(unique)
}

// endRequest clears it, and replaces the cancel channel if the watchdog
// closed it.
func (q *queue) endRequest() {
	if q.serving.Swap(0)&interruptedBit != 0 {
		q.cancel.Store(new(make(chan struct{})))
	}
}

// watch runs until done, interrupting requests whose callers have a
// signal pending.
func (rs *ringSet) watch(done <-chan struct{}) {
	last := make([]uint64, len(rs.queues))
	tick := time.NewTicker(watchPeriod)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		for i, q := range rs.queues {
			// The channel is loaded after serving read u and before the
			// CAS: it is replaced only by the endRequest of a request
			// whose bit was set, which comes before u began, so a CAS
			// that succeeds proves it is u's.
			u := q.serving.Load()
			cancel := q.cancel.Load()
			if u != 0 && u == last[i] && u&interruptedBit == 0 && signalPending(q.caller.Load()) &&
				q.serving.CompareAndSwap(u, u|interruptedBit) {
				close(*cancel)
			}
			last[i] = u
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
