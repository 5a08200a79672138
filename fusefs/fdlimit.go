package fusefs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NeededFDs is how many file descriptors a server needs: stdin, stdout,
// stderr, /dev/fuse, the Go runtime's poller (epoll and its wake-up fd),
// go-fuse's /dev/null and a splice pipe pair for each of its (at most
// 16) request readers, and room for pprof connections and mountinfo
// reads. Below it go-fuse fails mid-service (a panic opening /dev/null,
// pipe2 failing on every read) and leaves a dead mount.
const NeededFDs = 64

// RaiseFDLimit raises the soft RLIMIT_NOFILE to the hard one and checks
// it against NeededFDs, as a *UsageError saying what to do when the hard
// limit is below. Go raises the soft limit itself at start; this also
// covers a limit lowered since.
func RaiseFDLimit() error {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("reading the open-file limit: %w", err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			return fmt.Errorf("raising the open-file limit to %d: %w", rl.Max, err)
		}
	}
	if rl.Cur < NeededFDs {
		return usage("the open-file limit is %d (ulimit -n), and a server needs %d (stdio, /dev/fuse, the poller, go-fuse's splice pipes): raise it with ulimit -n %d or more", rl.Cur, NeededFDs, NeededFDs)
	}
	return nil
}
