package serverproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
)

// fuseSuperMagic is statfs's f_type of a FUSE mount.
const fuseSuperMagic = 0x65735546

// ErrNoServer is returned for a kernfsim target when no server command is
// available to start one. It is a *FieldError: its text names fields.
var ErrNoServer error = &setting.TextError{Text: "kernfsim server not available yet: measure in-process with {TargetSim}, " +
	"or mount kernfsim yourself and give {Dir} DIR"}

// ServerConfig starts a kernfsim FUSE server in a separate process, so
// that client and server do not share one Go runtime.
type ServerConfig struct {
	// Command runs `kernfsim mount`: the mountpoint, then --lock and Args
	// follow it. Empty means no server is available (ErrNoServer).
	Command []string
	Lock    string   // the strategy; "" means DefaultLock
	Args    []string // further flags: tree flags, --entry-timeout, ...
	// Transport, if not "", is the server's --transport.
	Transport string
	// Wait is how long to wait for the mount to serve; 0 means 30s.
	Wait time.Duration
}

// Server is a kernfsim server process and its temporary mountpoint.
type Server struct {
	mnt  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	werr error         // the process's exit; written before done is closed

	outMu    sync.Mutex    // protects output
	output   bytes.Buffer  // the server's stdout and stderr; protected by outMu
	said     chan struct{} // closed at the first line on stdout
	saidOnce sync.Once

	closeOnce sync.Once
	closeErr  error
}

// StartServer makes a temporary mountpoint, starts the server on it and
// waits until it is a FUSE mount. On failure nothing is left behind.
func StartServer(ctx context.Context, c ServerConfig) (*Server, error) {
	if len(c.Command) == 0 {
		return nil, ErrNoServer
	}
	if c.Lock == "" {
		c.Lock = DefaultLock
	}
	if c.Wait == 0 {
		c.Wait = 30 * time.Second
	}
	mnt, err := os.MkdirTemp("", "loadgen-kernfsim-")
	if err != nil {
		return nil, err
	}
	s := &Server{mnt: mnt, done: make(chan struct{}), said: make(chan struct{})}
	s.cmd = exec.Command(c.Command[0], client.MountArgs(c.Command[1:], mnt, c.Lock, c.Transport, c.Args)...)
	s.cmd.Stdout, s.cmd.Stderr = serverStdout{s}, serverStderr{s}
	// Own process group, so that a terminal's Ctrl-C does not unmount under
	// running workers; loadgen stops the server itself. Pdeathsig stops it
	// if loadgen dies.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	s.cmd.WaitDelay = time.Second // a grandchild holding the output pipes open does not hold up Wait
	if err := s.start(); err != nil {
		os.Remove(mnt)
		return nil, fmt.Errorf("starting the kernfsim server: %w", err)
	}
	if err := s.awaitMount(ctx, c.Wait); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// start starts the process from a goroutine that keeps its OS thread until
// the process exits: Pdeathsig fires when the thread that forked exits,
// not the process, and Go lets threads exit.
func (s *Server) start() error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		err := s.cmd.Start()
		started <- err
		if err != nil {
			runtime.UnlockOSThread()
			return
		}
		s.werr = s.cmd.Wait()
		close(s.done)
	}()
	return <-started
}

// awaitMount polls until the mountpoint is a FUSE mount and the server
// has printed its line saying it serves (or, should it print none, has
// been mounted for a second), the server exits, ctx ends or wait passes.
// Until the server says it serves, it may still be talking to its own
// mount (go-fuse's start-up does), and killing it then would leave a
// thread of it waiting on itself forever.
func (s *Server) awaitMount(ctx context.Context, wait time.Duration) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(wait)
	var since time.Time
	for {
		switch {
		case !s.mounted():
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case s.hasSaid() || time.Since(since) > time.Second:
			return nil
		}
		select {
		case <-s.done:
			return s.startError()
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("the kernfsim server did not mount %s within %v: %s", s.mnt, wait, s.Output())
		case <-tick.C:
		}
	}
}

// startError is the error of a server that exited before it mounted. When
// it exited 2, it refused what it was given or where it runs (no
// /dev/fuse, not root, a refused mount): a *ConfigError with its words and
// the way round FUSE.
func (s *Server) startError() error {
	msg := strings.Join(client.ServerMessages(s.Output()), "; ")
	var ee *exec.ExitError
	if errors.As(s.werr, &ee) && ee.ExitCode() == 2 {
		return &setting.Error{Field: "kernfsim server", Problem: "it could not mount: " + msg,
			Hint: "measure in-process with {TargetSim}, which needs neither root nor FUSE"}
	}
	return fmt.Errorf("the kernfsim server exited before it mounted (%v): %s", s.werr, msg)
}

func (s *Server) hasSaid() bool {
	select {
	case <-s.said:
		return true
	default:
		return false
	}
}

func (s *Server) mounted() bool {
	var st unix.Statfs_t
	return unix.Statfs(s.mnt, &st) == nil && st.Type == fuseSuperMagic
}

// Mountpoint is where the tree is mounted.
func (s *Server) Mountpoint() string { return s.mnt }

// Mount is how the server serves, from the line it printed once it
// served; nil if it printed none.
func (s *Server) Mount() *Mount {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	var m *Mount
	fellBack := ""
	for _, line := range strings.Split(s.output.String(), "\n") {
		if reason, ok := strings.CutPrefix(line, client.FallbackNotice); ok {
			fellBack = reason
		}
		if pm := parseMount(line); pm != nil && m == nil {
			m = pm
		}
	}
	if m != nil {
		m.FellBack = fellBack
	}
	return m
}

// Output is what the server has printed so far, on stdout and stderr.
func (s *Server) Output() string {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return string(bytes.TrimSpace(s.output.Bytes()))
}

// Pid is the server process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// ExitStatus waits up to d for the server process to exit and returns how
// it exited; ok is false if it is still running.
func (s *Server) ExitStatus(d time.Duration) (exit error, ok bool) {
	select {
	case <-s.done:
		return s.werr, true // written before done was closed
	case <-time.After(d):
		return nil, false
	}
}

// Exited reports whether the server process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Close stops the server (SIGTERM; SIGKILL after 10 s), unmounts what it
// left mounted and removes the mountpoint. It may be called more than
// once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.stop() })
	return s.closeErr
}

func (s *Server) stop() error {
	if !s.Exited() {
		// The server leads its own process group: signal all of it.
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	var errs []error
	if err := unmount(s.mnt); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(s.mnt); err != nil {
		errs = append(errs, fmt.Errorf("removing the mountpoint: %w", err))
	}
	return errors.Join(errs...)
}

// unmount detaches whatever is mounted on mnt, a dead FUSE mount too;
// nothing mounted is no error.
func unmount(mnt string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err == nil && st.Type != fuseSuperMagic {
		return nil // the server never mounted, or unmounted itself
	}
	err := unix.Unmount(mnt, unix.MNT_DETACH)
	switch {
	case err == nil || err == unix.EINVAL || err == unix.ENOENT:
		return nil
	case err == unix.EPERM:
		if out, ferr := exec.Command("fusermount3", "-uz", mnt).CombinedOutput(); ferr != nil {
			return fmt.Errorf("unmounting %s: %v; fusermount3: %v %s", mnt, err, ferr, bytes.TrimSpace(out))
		}
		return nil
	}
	return fmt.Errorf("unmounting %s: %w", mnt, err)
}

// serverStdout and serverStderr collect the server's output under outMu;
// the first line on stdout says the mount serves.
type (
	serverStdout struct{ s *Server }
	serverStderr struct{ s *Server }
)

func (o serverStdout) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, '\n') >= 0 {
		defer o.s.saidOnce.Do(func() { close(o.s.said) })
	}
	return o.s.keep(p)
}

func (o serverStderr) Write(p []byte) (int, error) { return o.s.keep(p) }

func (s *Server) keep(p []byte) (int, error) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	if s.output.Len() < 64<<10 {
		s.output.Write(p)
	}
	return len(p), nil
}

// NewServerGoneError is the error for a run whose mount lost its server
// midway, saying how to get the mountpoint back; tally holds the run's
// failures, of which it counts those the lost connection caused.
func NewServerGoneError(dir string, tally errtally.ErrorTally) error {
	var n int64
	for _, c := range tally {
		if kernfsim.Disconnected(c.Errno) {
			n += c.Count
		}
	}
	return fmt.Errorf("%s: the filesystem server went away during the run (ENOTCONN, ECONNABORTED or ECANCELED: the FUSE connection ended; "+
		"%d operations failed so): if it was kernfsim, serve the mountpoint again with '%s'; "+
		"otherwise detach the dead mount with 'umount -l %s' (or 'fusermount3 -uz %s')", dir, n, client.RemountCommand(dir), dir, dir)
}
