package uring

import (
	"runtime"
	"sync"
)

// A busy queue thread waits for its next request holding its P (see
// ring.wait): the runtime's monitor then never sees it in a system call
// and leaves it alone. The Ps it holds are added to GOMAXPROCS for as
// long as its ring set lives, so the rest of the process keeps as many
// as it had. headroom keeps the count across the ring sets of the
// process.
var headroom struct {
	mu    sync.Mutex
	added int // Ps added for live ring sets; protected by mu
}

// addProcs raises GOMAXPROCS by n for a ring set of n queues.
func addProcs(n int) {
	headroom.mu.Lock()
	defer headroom.mu.Unlock()
	headroom.added += n
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
}

// releaseProcs takes back what addProcs(n) added, once the ring set's
// queue threads have ended.
func releaseProcs(n int) {
	headroom.mu.Lock()
	defer headroom.mu.Unlock()
	headroom.added -= n
	runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)-n))
}
