package mountcmd

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/cli"
)

// The address-space limit (RLIMIT_AS, ulimit -v). Past it a thread cannot
// be started (the runtime aborts with every goroutine's stack) and the
// heap cannot grow (the runtime dies "out of memory"); after mount(2) that
// leaves a dead mount. So mount checks, before it builds the tree and
// again before it mounts, that the limit holds what serving needs besides
// what the process has mapped already (VmSize), and otherwise exits 2
// naming the limit and the figure.
//
// What serving needs, counted generously (the limit counts reservations,
// not memory used):
//   - a stack per thread still to start: one queue thread per possible
//     CPU (io_uring), one more runtime thread per queue (GOMAXPROCS is
//     raised by one per queue), and spareThreads (the /dev/fuse reader
//     loop, the notifier, the runtime's own); a thread's stack is
//     RLIMIT_STACK where cgo starts threads (glibc's default), else the
//     runtime's own 8 MiB at most. The threads already running are in
//     VmSize;
//   - not glibc's malloc arenas (64 MiB reservations, one per thread
//     that mallocs, up to 8 per CPU): malloc does without a new arena
//     where the limit refuses one;
//   - the io_uring payload buffers: DefaultDepth entries of 128 KiB and a
//     page per queue;
//   - the heap: twice the tree (GOGC's default lets the heap reach twice
//     what is live) and one 64 MiB heap arena of headroom.

const (
	spareThreads   = 4
	goThreadStack  = 8 << 20  // the most a Go-started thread's system stack reserves
	heapArena      = 64 << 20 // the Go heap grows by reservations of this size
	defaultStack   = 8 << 20  // glibc's thread stack where RLIMIT_STACK is unlimited (generous)
	entryBytes     = 128<<10 + 4096
	addressSpaceOK = "ulimit -v unlimited"
)

// addressSpace is what checkAddressSpace compares: the limit, what is
// mapped, what serving needs on top, and how many threads that counts.
type addressSpace struct {
	limit, mapped, need int64
	threads             int
}

// checkAddressSpace is a *cli.UsageError if RLIMIT_AS cannot hold what
// serving a tree of treeBytes over transport needs besides what the
// process has mapped now (treeBytes 0: the tree is built already, or its
// size is unknown). Nothing is refused without a limit or where VmSize
// cannot be read.
func checkAddressSpace(transport uring.Kind, treeBytes int64) error {
	as, ok := measureAddressSpace(transport, treeBytes)
	if !ok || as.mapped+as.need <= as.limit {
		return nil
	}
	return &cli.UsageError{Err: fmt.Errorf("the address-space limit (RLIMIT_AS, ulimit -v) is %s: serving needs about %s more than the %s mapped now "+
		"(%d more threads' stacks, the io_uring buffers, the tree), so nothing was mounted: raise it by more than %s "+
		"(the Go runtime reserves more under a higher limit; about 2 GiB serves the default tree on 2 CPUs), or remove it (%s)",
		mib(as.limit), mib(as.need), mib(as.mapped), as.threads, mib(as.mapped+as.need-as.limit), addressSpaceOK)}
}

// measureAddressSpace reads the limit and VmSize and counts the need;
// false without a limit or a VmSize.
func measureAddressSpace(transport uring.Kind, treeBytes int64) (addressSpace, bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return addressSpace{}, false
	}
	mapped, ok := vmSize()
	if !ok {
		return addressSpace{}, false
	}
	queues := 0
	if transport != uring.DevFuse {
		queues, _ = uring.PossibleCPUs()
	}
	threads := 2*queues + spareThreads
	need := int64(queues)*(uring.DefaultDepth*entryBytes+4096) + 2*treeBytes + heapArena + int64(threads)*threadStack()
	return addressSpace{limit: int64(min(rl.Cur, 1<<62)), mapped: mapped, need: need, threads: threads}, true
}

// threadStack is what a new thread's stack reserves.
func threadStack() int64 {
	if !cgoThreads {
		return goThreadStack
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return defaultStack
	}
	return int64(min(rl.Cur, 1<<40))
}

// vmSize is the process's VmSize from /proc/self/status, in bytes.
func vmSize() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmSize:")); ok {
			f := bytes.Fields(v)
			if len(f) == 2 && string(f[1]) == "kB" {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10, err == nil
			}
		}
	}
	return 0, false
}

// mib is n bytes in MiB.
func mib(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }
