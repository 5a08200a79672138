package uring

// MountOptions.MaxInflightRequestBytes and SingleThreaded over the rings.
//
// go-fuse's loop counts, per request it holds, a request struct and a
// read buffer (fuseFD's reqAllocBytes + readBufBytes), and stops reading
// /dev/fuse while the next would pass MaxInflightRequestBytes, letting one
// through when none is held. A queue holds at most its depth of requests
// in pinned buffers (bounded by Config.MaxPinnedBytes), but the requests
// it serves off its thread (WRITE and SETATTR, each on a goroutine of its
// own) are not bounded by that: each goroutine takes go-fuse's bytes per
// request before it calls the file system and gives them back after, so
// that no more are served at once than go-fuse's loop would serve. A
// goroutine waiting for bytes holds its entry; its queue serves the
// CPU's other requests meanwhile.
//
// SingleThreaded: every request, on a queue thread or off it, is served
// under one mutex, as go-fuse's loop serves it.

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// limiter is MaxInflightRequestBytes and SingleThreaded for one
// connection's queues.
type limiter struct {
	max    int         // MaxInflightRequestBytes; <= 0: no limit. Immutable
	single *sync.Mutex // held while serving any request under SingleThreaded; nil otherwise. Immutable
	per    int         // go-fuse's bytes per request; set at INIT, before any request (hookGoFuse)

	mu       sync.Mutex
	freed    sync.Cond // signalled when bytes are given back; L is &mu
	inflight int       // bytes taken; protected by mu
}

// newLimiter is opts' limits; go-fuse's bytes per request are set once
// go-fuse has answered INIT.
func newLimiter(opts *fuse.MountOptions) *limiter {
	l := &limiter{max: opts.MaxInflightRequestBytes}
	l.freed.L = &l.mu
	if opts.SingleThreaded {
		l.single = new(sync.Mutex)
	}
	return l
}

// acquire takes one request's bytes, waiting while they would pass the
// limit; one request is let through whatever the limit when none holds
// any, as go-fuse's loop does (fuseFD.canReserveRequestBytes). Tested by
// TestMaxInflightRequestBytes.
func (l *limiter) acquire() {
	if l == nil || l.max <= 0 {
		return
	}
	l.mu.Lock()
	for l.inflight != 0 && l.per > l.max-l.inflight {
		l.freed.Wait()
	}
	l.inflight += l.per
	l.mu.Unlock()
}

// release gives back what acquire took.
func (l *limiter) release() {
	if l == nil || l.max <= 0 {
		return
	}
	l.mu.Lock()
	l.inflight -= l.per
	l.mu.Unlock()
	l.freed.Broadcast()
}

// lock takes the SingleThreaded mutex, if any, and returns whether it
// did, for unlock.
func (l *limiter) lock() bool {
	if l == nil || l.single == nil {
		return false
	}
	l.single.Lock()
	return true
}

func (l *limiter) unlock(locked bool) {
	if locked {
		l.single.Unlock()
	}
}

// requestBytes is what go-fuse's loop counts for one request of srv
// against MaxInflightRequestBytes. goFuseLayout must have returned nil.
func requestBytes(srv *fuse.Server) int {
	fd := field(srv, "fuseFD").Elem()
	return int(fd.FieldByName("reqAllocBytes").Int() + fd.FieldByName("readBufBytes").Int())
}
