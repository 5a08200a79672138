// Package guardian ends a FUSE connection whose server died without
// closing it.
//
// A killed server can leave a thread stuck in the kernel; its zombie
// then keeps /dev/fuse open, and the kernel never aborts the connection
// (docs/design.md, "Transports").
//
// Start re-executes the running binary as a small process of its own
// (its own process group, cwd "/", stdin and stdout on /dev/null, no
// /dev/fuse or io_uring descriptor) that watches the server and aborts
// the connection for it. It is handed, as descriptors:
//
//	3: a pidfd of the server
//	4: the connection's fusectl abort file, opened by the server while it
//	   serves, so it names this connection and no later one that reuses
//	   its number (fusectl.OpenAbort)
//	5: the read end of a pipe whose write end only the server holds
//
// and, as arguments, the server's pid, the mountpoint and the connection's
// number (the minor of the mount's device).
//
// The states:
//
//	watching: poll the pidfd and the pipe, every period also read the
//	  server's state in /proc/PID/stat.
//	  - a byte on the pipe: the server unmounted and stopped it (the
//	    function Start returns); exit.
//	  - pipe closed without a byte: the server is exiting; its
//	    descriptor table, /dev/fuse included, is gone. Watch the pidfd
//	    alone from then on.
//	  - pidfd readable (every thread gone), or the state is Z or X (the
//	    main thread exited; another may be stuck in the kernel): dying.
//	dying: wait grace, then decide (shouldAbort): abort iff the abort file
//	  still names a live connection (its link count is not 0 and the
//	  file at its path is the same inode) and that connection is still
//	  mounted at the mountpoint (/proc/self/mountinfo: a FUSE mount at the
//	  mountpoint whose device is 0:conn). Then exit.
//
// So the guardian outlives its server by at most period+grace. It never
// stats the mountpoint (a dead server's mount can hang a stat), and it
// aborts no connection but its server's: the open abort file names it,
// and the mount-table check keeps it off one moved or detached since.
// After a plain kill -9 its abort is a second one, which the kernel
// ignores.
//
// Locks: none. The parent side (Start, stop) shares nothing with the
// guardian but the descriptors above; stop is guarded by a sync.Once.
// The guardian ignores SIGHUP: it is a process group of its own, which
// the kernel hangs up once its parent has died if it is stopped.
//
// A binary becomes a guardian by importing this package: its init runs
// the guardian and exits when the process was started as one
// (envGuardian and argv[0] guardianName), before main or a test
// binary's flag parsing. Start needs fusectl mounted or mountable;
// without it the mount serves unguarded.
package guardian

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/fusectl"
)

// envGuardian marks a process started by Start as the guardian.
const envGuardian = "KERNFSIM_GUARDIAN"

const (
	// period is how often a watching guardian reads the server's state
	// (a zombie whose thread is stuck makes no pidfd event).
	period = 200 * time.Millisecond
	// grace is how long the server may take to die before its
	// connection is aborted.
	grace = 300 * time.Millisecond
)

// The descriptors a guardian is started with.
const (
	fdPid   = 3
	fdAbort = 4
	fdStop  = 5
)

// guardianName is a guardian's argv[0], as ps shows it.
const guardianName = "kernfsim-guardian"

func init() {
	if os.Getenv(envGuardian) == "1" && len(os.Args) > 0 && os.Args[0] == guardianName {
		os.Exit(guard(os.Args[1:], os.Stderr))
	}
}

// Guard starts the guardian of this process's mount of FUSE connection
// conn at mountpoint and returns the function that stops it, to call once
// the mount is unmounted. If the guardian cannot be started the mount
// serves without one; as root that is said on stderr. The guardian writes
// to stderr only when stderr is an *os.File.
func Guard(mountpoint string, conn uint32, stderr io.Writer) (stop func()) {
	f, _ := stderr.(*os.File)
	stop, err := Start(mountpoint, conn, f)
	if err != nil && os.Geteuid() == 0 {
		fmt.Fprintf(stderr, "kernfsim: serving without a guardian (%v): if this server is killed while the kernel waits on it, end its clients with echo 1 > %s/%d/abort\n", err, fusectl.Dir, conn)
	}
	return stop
}

// Start starts the guardian (see the package doc) and returns the
// function that stops it; stderr (nil for none) is where the guardian
// says it aborted the connection.
func Start(mountpoint string, conn uint32, stderr *os.File) (stop func(), err error) {
	files, err := guardFiles(conn)
	if err != nil {
		return func() {}, err
	}
	defer func() {
		for _, f := range files[:2] {
			f.Close()
		}
	}()
	stopR, stopW := files[2], files[3]
	defer stopR.Close()
	cmd := exec.Command("/proc/self/exe", mountpoint, strconv.FormatUint(uint64(conn), 10), strconv.Itoa(os.Getpid()))
	cmd.Args[0] = guardianName
	cmd.Env = append(os.Environ(), envGuardian+"=1")
	cmd.Dir = "/"
	cmd.ExtraFiles = files[:3]
	if stderr != nil {
		cmd.Stderr = stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		stopW.Close()
		return func() {}, fmt.Errorf("start the guardian: %w", err)
	}
	go cmd.Wait() // reap it when it exits before this process
	var once sync.Once
	return func() {
		once.Do(func() {
			stopW.Write([]byte{'s'})
			stopW.Close()
		})
	}, nil
}

// guardFiles opens what the guardian is handed: the server's pidfd, the
// connection's abort file, and the stop pipe's read and write ends.
func guardFiles(conn uint32) ([]*os.File, error) {
	abort, err := fusectl.OpenAbort(conn)
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		abort.Close()
		return nil, fmt.Errorf("pidfd_open: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		abort.Close()
		unix.Close(pidfd)
		return nil, err
	}
	return []*os.File{os.NewFile(uintptr(pidfd), "pidfd"), abort, r, w}, nil
}
