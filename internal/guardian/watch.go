package guardian

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/fusectl"
	"github.com/kernfsim/kernfsim/internal/mountinfo"
)

// watch is a guardian's view of its server. All fields are immutable.
type watch struct {
	pid   int
	point string
	conn  uint32
	abort *os.File
	log   io.Writer
}

// guard is the guardian's main: args are MOUNTPOINT CONN PID, the
// descriptors those the package doc lists. It returns the exit status.
func guard(args []string, log io.Writer) int {
	closeFUSE()
	signal.Ignore(syscall.SIGHUP) // a hangup of the server's terminal or process group is not its death
	if len(args) != 3 {
		fmt.Fprintf(log, "kernfsim-guardian: got %d arguments, want MOUNTPOINT CONN PID\n", len(args))
		return 2
	}
	conn, err1 := strconv.ParseUint(args[1], 10, 32)
	pid, err2 := strconv.Atoi(args[2])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(log, "kernfsim-guardian: %v\n", err)
		return 2
	}
	w := &watch{pid: pid, point: args[0], conn: uint32(conn), abort: os.NewFile(fdAbort, "abort"), log: log}
	if !w.waitDying() {
		return 0
	}
	time.Sleep(grace)
	w.endIfStuck()
	return 0
}

// waitDying waits until the server is dying (true) or has stopped the
// guardian (false).
func (w *watch) waitDying() bool {
	fds := []unix.PollFd{{Fd: fdPid, Events: unix.POLLIN}, {Fd: fdStop, Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		_, err := unix.Poll(fds, int(period/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			fmt.Fprintf(w.log, "kernfsim-guardian: cannot watch the server (pid %d): poll: %v\n", w.pid, err)
			return false // never abort what it cannot tell is dying
		}
		if fds[1].Revents != 0 && stopped() {
			return false
		}
		if fds[0].Revents != 0 || dyingState(procState(w.pid)) {
			return true
		}
		if fds[1].Revents != 0 {
			fds[1].Fd = -1 // closed without a word: the server is exiting; poll ignores it from now on
		}
	}
}

// stopped reports whether the server wrote the stop byte (Start's stop)
// rather than closing the pipe by exiting.
func stopped() bool {
	var b [1]byte
	n, _ := unix.Read(fdStop, b[:])
	return n == 1
}

// endIfStuck aborts the connection if shouldAbort says so, and says so.
func (w *watch) endIfStuck() {
	table, err := mountinfo.Self()
	if err != nil {
		fmt.Fprintf(w.log, "kernfsim-guardian: %v\n", err)
		return
	}
	if !shouldAbort(true, w.live(), table, w.point, w.conn) {
		return
	}
	if _, err := w.abort.Write([]byte("1")); err != nil {
		fmt.Fprintf(w.log, "kernfsim: the server (pid %d) died with %s still mounted, and its FUSE connection %d could not be aborted (%v): run echo 1 > %s/%d/abort\n", w.pid, w.point, w.conn, err, fusectl.Dir, w.conn)
		return
	}
	fmt.Fprintf(w.log, "kernfsim: the server (pid %d) died with %s still mounted; its FUSE connection %d is aborted, so its clients get ENOTCONN (kernfsim mount %s --force serves it again)\n", w.pid, w.point, w.conn, w.point)
}

// live reports whether the abort file still names a live connection: the
// kernel unlinks it when it removes the connection, and a later
// connection with the same number has an abort file of its own. Tested
// by TestHeldAbortFileSparesALaterConnection.
func (w *watch) live() bool {
	var held, now unix.Stat_t
	if unix.Fstat(int(w.abort.Fd()), &held) != nil || held.Nlink == 0 {
		return false
	}
	path := fmt.Sprintf("%s/%d/abort", fusectl.Dir, w.conn)
	return unix.Stat(path, &now) == nil && now.Dev == held.Dev && now.Ino == held.Ino
}

// shouldAbort is the guardian's decision: abort only a dying server's
// connection that is live and still mounted at point (a FUSE mount there
// whose device is 0:conn, covered or not). Tested by TestShouldAbort.
func shouldAbort(dying, live bool, table []mountinfo.Entry, point string, conn uint32) bool {
	if !dying || !live {
		return false
	}
	for _, e := range table {
		if e.Point == point && e.FUSE() && e.Major == 0 && e.Minor == conn {
			return true
		}
	}
	return false
}

// procState is the state letter of /proc/PID/stat (R, S, D, Z, X, ...),
// or 'X' if pid is gone.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 'X'
	}
	return parseState(b)
}

// parseState is the state letter of a /proc/PID/stat line: the field
// after the command, which is in parentheses and may hold any byte.
func parseState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// dyingState reports whether a process in state s has exited or is
// exiting: Z (its main thread exited, others may remain) or X.
func dyingState(s byte) bool { return s == 'Z' || s == 'X' }

// closeFUSE closes any /dev/fuse or io_uring descriptor the guardian
// inherited: holding one would keep the connection alive after the
// server's death, which is what the guardian is there to end. Start
// passes none (every such descriptor of the server is close-on-exec);
// this makes sure.
func closeFUSE() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= fdStop {
			continue
		}
		if link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && heldByFUSE(link) {
			unix.Close(fd)
		}
	}
}

// heldByFUSE reports whether a descriptor whose /proc/self/fd link is
// link keeps a FUSE connection open.
func heldByFUSE(link string) bool {
	return link == "/dev/fuse" || strings.Contains(link, "io_uring")
}
