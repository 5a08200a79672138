package uring

import (
	"runtime"
	"sync"
)

// A busy queue thread waits for its next request holding its P (see
// ring.wait): the runtime's monitor then never sees it in a system call
// and leaves it alone. The Ps it holds are added to GOMAXPROCS for as
// long as its ring set lives, so the rest of the process keeps as many
// as it had. procsMu makes each change a single read-modify-write
// across the ring sets of the process.
var procsMu sync.Mutex

// addProcs raises GOMAXPROCS by n for a ring set of n queues.
func addProcs(n int) {
	procsMu.Lock()
	defer procsMu.Unlock()
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
}

// releaseProcs takes back what addProcs(n) added, once the ring set's
// queue threads have ended.
func releaseProcs(n int) {
	procsMu.Lock()
	defer procsMu.Unlock()
	runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)-n))
}
