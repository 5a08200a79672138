package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// statusDeadline bounds the wait for a server's status line: it is a
// failure detector, not a synchronisation (the line is read from the pipe).
const statusDeadline = 20 * time.Second

// exitDeadline bounds the wait for a server to exit after a signal.
const exitDeadline = 10 * time.Second

// server is a `kernfsim mount` subprocess.
type server struct {
	mnt    string
	cmd    *exec.Cmd
	status string // the status line, without its newline
	stderr *testkit.SyncBuffer
	done   chan struct{} // closed once the process has been waited for
}

// newMountpoint returns a fresh empty directory, its path with symlinks
// resolved (as /proc/self/mountinfo shows it). When the test ends,
// anything still mounted there is detached lazily, before the directory
// is removed.
func newMountpoint(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	t.Cleanup(func() { detachAll(t, mnt) })
	return mnt
}

// detachAll lazily unmounts every mount on mnt.
func detachAll(t testing.TB, mnt string) {
	for i := 0; i < 8 && isMounted(t, mnt); i++ {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("umount -l %s: %v", mnt, err)
			return
		}
		t.Logf("cleanup: detached a mount left on %s", mnt)
	}
}

// isMounted reports whether mnt is a mount point in this mount namespace.
func isMounted(t testing.TB, mnt string) bool { t.Helper(); return fusetest.IsMounted(t, mnt) }

// startServer runs `kernfsim mount MNT args...` and returns once it has
// printed its status line. When the test ends the server gets SIGTERM
// (SIGKILL if it has not exited 10 s later) and whatever it left mounted
// is detached.
func startServer(t testing.TB, mnt string, args ...string) *server {
	t.Helper()
	return startServerIn(t, "", mnt, args...)
}

// startServerIn is startServer with the server run by sh after the shell
// command prefix (say, "ulimit -Sn 10"), if not "".
func startServerIn(t testing.TB, prefix, mnt string, args ...string) *server {
	t.Helper()
	testkit.RequireFUSE(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	s := &server{mnt: mnt, stderr: new(testkit.SyncBuffer), done: make(chan struct{})}
	s.cmd = kernfsimCmd(context.Background(), append([]string{"mount", mnt}, args...)...)
	if prefix != "" {
		inShell(s.cmd, prefix)
	}
	s.cmd.Stdout, s.cmd.Stderr = w, s.stderr
	err = s.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.cleanup(t) })
	lines := make(chan string, 1)
	go readStatus(r, lines)
	select {
	case line, ok := <-lines:
		if !ok {
			<-s.done
			t.Fatalf("kernfsim mount %s: exited (%v) without a status line; stderr:\n%s", mnt, s.cmd.ProcessState, s.stderr)
		}
		s.status = line
	case <-time.After(statusDeadline):
		t.Fatalf("kernfsim mount %s: no status line after %v; stderr:\n%s", mnt, statusDeadline, s.stderr)
	}
	return s
}

// readStatus sends the first line of r on lines (or closes lines at EOF),
// then drains r so the server never blocks writing to stdout.
func readStatus(r *os.File, lines chan<- string) {
	defer r.Close()
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil {
		close(lines)
		return
	}
	lines <- strings.TrimSuffix(line, "\n")
	io.Copy(io.Discard, br)
}

// exited reports whether the process has exited.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the server and waits up to exitDeadline for it to
// exit, returning how long that took, or fails the test.
func (s *server) signal(t testing.TB, sig syscall.Signal) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, s.cmd.Process.Signal(sig), "kill -%d %d", sig, s.cmd.Process.Pid)
	select {
	case <-s.done:
		return time.Since(start)
	case <-time.After(exitDeadline):
		t.Fatalf("kernfsim mount %s: still running %v after signal %v; stderr:\n%s", s.mnt, exitDeadline, sig, s.stderr)
		return 0
	}
}

// stop sends SIGTERM and checks a clean exit: status 0, nothing left
// mounted, the mountpoint usable again.
func (s *server) stop(t testing.TB) time.Duration {
	t.Helper()
	d := s.signal(t, syscall.SIGTERM)
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status after SIGTERM: got %d, want 0; stderr:\n%s", code, s.stderr)
	}
	if isMounted(t, s.mnt) {
		t.Errorf("%s is still in /proc/self/mountinfo after the server exited", s.mnt)
	} else if _, err := os.Stat(s.mnt); err != nil {
		t.Errorf("stat %s after the server exited: %v", s.mnt, err)
	}
	return d
}

func (s *server) cleanup(t testing.TB) {
	if !s.exited() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(exitDeadline):
			t.Errorf("kernfsim mount %s: still running %v after SIGTERM; killing it", s.mnt, exitDeadline)
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	detachAll(t, s.mnt)
}

// wantStatus checks the status line names the mountpoint and the lock.
func (s *server) wantStatus(t testing.TB, lock string) {
	t.Helper()
	prefix := "kernfsim: serving "
	want := fmt.Sprintf(" on %s: lock=%s ", s.mnt, lock)
	if !strings.HasPrefix(s.status, prefix) || !strings.Contains(s.status, want) {
		t.Errorf("status line: got %q, want %q...%q...", s.status, prefix, want)
	}
}
