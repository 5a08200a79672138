package uring

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Entry growth: no handler can use up a queue.
//
// Every request served off the leader (a WRITE waiting for its kernel
// notices, a handler whose lead was taken) keeps its entry until it
// returns. Four writers on one CPU would hold a depth-4 queue's every
// entry, and that CPU's other requests would wait for one: a READDIR
// among them holds its directory's i_rwsem while it waits, and the
// writers' notices wait for that i_rwsem. So a queue keeps spareEntries
// entries free of such requests, registering more as they are held, up to
// maxEnts (Config.MaxPinnedBytes bounds it too).
const (
	spareEntries = 2
	maxGrow      = 256 // entries per queue at most, whatever the pinned-memory bound
)

// grow registers entries until, on each of the queue's qids,
// spareEntries (or the first depth, if smaller) are free of requests
// served off the leader, within maxEnts per qid.
// Preconditions: the caller leads the queue.
func (q *queue) grow() {
	if q.stopped || q.failed != nil {
		return
	}
	for qi := range q.qids {
		qs := &q.qids[qi]
		free := qs.live - int(qs.busy.Load())
		want := min(spareEntries, q.depth)
		if free >= want || qs.ents >= q.maxEnts {
			continue
		}
		n := min(want-free, q.maxEnts-qs.ents)
		first := len(q.ents)
		if err := q.addEntries(qi, n); err != nil {
			q.handler.logger.Printf("uring: %v; qid %d stays at %d entries", err, qs.qid, qs.ents)
			q.maxEnts = qs.ents
			return
		}
		for e := first; e < len(q.ents); e++ {
			q.registerEntry(e)
		}
		q.live += n
		qs.live += n
		q.grown.Add(uint64(n))
		// Requests that came while too few entries were free may wait in
		// the kernel's queue, and the kernel hands a newly registered
		// entry only a request that arrives after it
		// (fuse_uring_do_register). So the registers go in now, and one
		// request from the qid's CPU follows them: when its reply is
		// committed, the kernel fetches the oldest waiting request into
		// that entry (fuse_uring_commit_fetch).
		if err := q.ring.submit(); err == nil {
			go q.handler.nudge(qs.qid)
		}
	}
}

// statxNudge is a handler's nudge: one GETATTR of the mount's root, sent
// from CPU cpu (the kernel queues a request on its caller's CPU's qid).
func (h *handler) statxNudge(cpu int) {
	if h.mnt == "" {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.CPUSet
	if unix.SchedGetaffinity(0, &old) != nil {
		return
	}
	set.Set(cpu)
	if unix.SchedSetaffinity(0, &set) != nil {
		return
	}
	defer unix.SchedSetaffinity(0, &old)
	var st unix.Statx_t
	unix.Statx(unix.AT_FDCWD, h.mnt, unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &st)
}
