package tests

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/internal/fusectl"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// heldDir is the directory whose READDIR the server holds in
// TestKillDuringNotifierStall, and where new_device adds a device.
const heldDir = "devices/kernfsim"

// killBound bounds how long a client may wait after the kill: a failure
// detector, far above what the guardian takes (period + grace).
const killBound = 20 * time.Second

// TestKillDuringNotifierStall kills the server with SIGKILL while its
// notifier thread waits uninterruptibly in fuse_reverse_inval_entry for
// a directory's i_rwsem, which a client's READDIR holds shared while the
// server holds that READDIR (fusefs.HoldReaddirEnv). The stuck thread
// keeps the zombie's /dev/fuse open, so the kernel never aborts the
// connection on its own; the mount's guardian does: the client returns
// within killBound with ECONNABORTED, ENOTCONN or EIO, the zombie exits,
// stderr says the connection was aborted, and the guardian, which held
// no /dev/fuse or io_uring descriptor, exits too. Both transports.
func TestKillDuringNotifierStall(t *testing.T) {
	testkit.RequireFUSE(t)
	t.Setenv(fusefs.HoldReaddirEnv, heldDir)
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) { testKillDuringNotifierStall(t, tp.name, tp.args) })
	}
}

func testKillDuringNotifierStall(t *testing.T, name string, transport []string) {
	mnt := newMountpoint(t)
	s := startServer(t, mnt, append(append([]string{"--entry-timeout", "30s"}, transport...), smallTree...)...)
	readerCPU, otherCPU := pinTest(t, name == "uring") // after the start: a child inherits the mask
	var st unix.Stat_t
	require.NoError(t, unix.Stat(mnt, &st))
	conn := unix.Minor(st.Dev)
	guard := guardianOf(t, s.cmd.Process.Pid)
	read := holdReaddir(t, mnt, readerCPU)
	go onCPU(otherCPU, func() { os.WriteFile(filepath.Join(mnt, "bus/kernfsim/new_device"), []byte("stall0 1"), 0) })
	where := awaitStuckThread(t, s.cmd.Process.Pid)
	t.Logf("a server thread waits in the kernel: %s", where)

	killed := time.Now()
	require.NoError(t, s.cmd.Process.Kill())
	select {
	case r := <-read:
		t.Logf("the client returned %v after kill -9 (%v)", r.at.Sub(killed).Round(time.Millisecond), r.err)
		if !kernfsim.Disconnected(r.err) && !errors.Is(r.err, syscall.EIO) {
			t.Errorf("getdents after kill -9: got %v, want ECONNABORTED, ENOTCONN or EIO", r.err)
		}
	case <-time.After(killBound):
		err := fusectl.Abort(conn) // frees the client and the zombie, so the test ends
		t.Fatalf("the client's READDIR still waits %v after kill -9 (a server thread stuck in %s); aborted connection %d through fusectl (%v); stderr:\n%s", killBound, where, conn, err, s.stderr)
	}
	select {
	case <-s.done:
	case <-time.After(exitDeadline):
		t.Fatalf("the killed server is not reaped %v after its client returned", exitDeadline)
	}
	if !strings.Contains(s.stderr.String(), fmt.Sprintf("FUSE connection %d is aborted", conn)) {
		t.Errorf("stderr does not say connection %d was aborted:\n%s", conn, s.stderr)
	}
	testkit.WaitFor(t, exitDeadline, 10*time.Millisecond, func() error {
		if state := taskState(guard, guard); state != 0 && state != 'Z' {
			return fmt.Errorf("the guardian (pid %d) still runs (state %c) after its server exited", guard, state)
		}
		return nil
	})
}

// dirResult is how a held READDIR ended.
type dirResult struct {
	err error
	at  time.Time
}

// holdReaddir opens heldDir and starts a getdents on it from a thread
// pinned to cpu; it returns once the server has the READDIR, which it
// holds, so the client holds the directory's i_rwsem shared.
func holdReaddir(t *testing.T, mnt string, cpu int) <-chan dirResult {
	fd, err := unix.Open(filepath.Join(mnt, heldDir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	before := counter(t, mnt, "requests.READDIR")
	read := make(chan dirResult, 1)
	go onCPU(cpu, func() {
		_, err := unix.Getdents(fd, make([]byte, 4096))
		read <- dirResult{err, time.Now()}
	})
	testkit.WaitFor(t, statusDeadline, 10*time.Millisecond, func() error {
		if counter(t, mnt, "requests.READDIR") <= before {
			return fmt.Errorf("the server got no READDIR of %s within %v", heldDir, statusDeadline)
		}
		return nil
	})
	return read
}

// awaitStuckThread waits until a thread of pid sits uninterruptibly in
// fuse_reverse_inval_entry (state D; where the kernel shows stacks, that
// function on it) and says where.
func awaitStuckThread(t *testing.T, pid int) string {
	var where string
	testkit.WaitFor(t, statusDeadline, 10*time.Millisecond, func() error {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, e := range tasks {
			tid, _ := strconv.Atoi(e.Name())
			if taskState(pid, tid) != 'D' {
				continue
			}
			stack, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stack", pid, tid))
			if err != nil || strings.Contains(string(stack), "fuse_reverse_inval_entry") {
				where = fmt.Sprintf("thread %d, state D, stack %q", tid, firstLines(string(stack), 4))
				return nil
			}
		}
		return fmt.Errorf("no thread of the server waits in fuse_reverse_inval_entry after %v", statusDeadline)
	})
	return where
}

// taskState is the state letter of task tid of process pid, 0 if gone.
func taskState(pid, tid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	i := strings.LastIndexByte(string(b), ')')
	if err != nil || i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// guardianOf is the pid of pid's guardian (its child), after checking it
// holds no descriptor that keeps a FUSE connection open.
func guardianOf(t *testing.T, pid int) int {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	require.NoError(t, err)
	var kids []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		kids = append(kids, strings.Fields(string(b))...)
	}
	require.Len(t, kids, 1, "the server's children: want its guardian alone")
	guard, _ := strconv.Atoi(kids[0])
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", guard))
	require.NoError(t, err)
	for _, fd := range fds {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", guard, fd.Name()))
		if link == "/dev/fuse" || strings.Contains(link, "io_uring") {
			t.Errorf("the guardian (pid %d) holds fd %s -> %s", guard, fd.Name(), link)
		}
	}
	return guard
}

// counter is a counter of the server's stats file at mnt.
func counter(t *testing.T, mnt, name string) int {
	f, err := os.Open(filepath.Join(mnt, "kernel/kernfsim/stats"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// pinTest pins the test's goroutine, for the rest of the test, to one CPU
// it may run on and returns another for the held READDIR: over io_uring a
// CPU's queue thread serves that CPU's requests, and one of them is held.
// With one CPU it skips where two are needed, and returns it twice.
func pinTest(t *testing.T, needTwo bool) (reader, other int) {
	var all unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &all))
	var cpus []int
	for c := 0; c < len(all)*64 && len(cpus) < 2; c++ {
		if all.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 && needTwo {
		t.Skip("over io_uring the held READDIR takes a CPU's queue: needs two CPUs")
	}
	reader, other = cpus[0], cpus[len(cpus)-1]
	runtime.LockOSThread()
	var one unix.CPUSet
	one.Set(other)
	require.NoError(t, unix.SchedSetaffinity(0, &one))
	t.Cleanup(func() {
		unix.SchedSetaffinity(0, &all)
		runtime.UnlockOSThread()
	})
	return reader, other
}

// onCPU runs f on a thread pinned to cpu, which ends with it.
func onCPU(cpu int, f func()) {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	var one unix.CPUSet
	one.Set(cpu)
	unix.SchedSetaffinity(0, &one)
	f()
}

// firstLines is s's first n lines, joined by " | ".
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(n, len(lines))], " | ")
}
