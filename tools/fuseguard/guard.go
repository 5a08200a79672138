package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// guard runs one test binary and ends it if it hangs.
type guard struct {
	grace     time.Duration // how long past -test.timeout the binary may run
	exitGrace time.Duration // how long an exiting binary may keep a thread
	out       io.Writer     // fuseguard's own messages
	self      string        // fuseguard's executable, to re-run in a namespace; "" runs the binary as it is
}

// poll is how often the binary's state is read.
const poll = 250 * time.Millisecond

// giveUp bounds how long fuseguard waits after it intervened: past it,
// it exits and leaves whatever the kernel still holds.
const giveUp = 60 * time.Second

// run starts bin, waits for it, and returns its exit status, or 1 (at
// least) if it had to be ended.
func (g *guard) run(bin string, args []string) int {
	cmd := g.command(bin, args)
	copied, err := pipeOutput(cmd)
	if err == nil {
		err = cmd.Start()
		cmd.Stdout.(*os.File).Close()
		cmd.Stderr.(*os.File).Close()
	}
	if err != nil {
		fmt.Fprintf(g.out, "fuseguard: start %s: %v\n", bin, err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGTERM)

	var deadline <-chan time.Time
	if d := testTimeout(args); d > 0 {
		deadline = time.After(d + g.grace)
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	pid := cmd.Process.Pid
	var zombieSince time.Time
	for {
		select {
		case err := <-exited:
			<-copied
			return exitStatus(err)
		case s := <-sigs:
			cmd.Process.Signal(s)
			return g.end(pid, exited, fmt.Sprintf("fuseguard received %v", s))
		case <-deadline:
			return g.end(pid, exited, fmt.Sprintf("%s is still running %v past its -test.timeout (%v)", filepath.Base(bin), g.grace, testTimeout(args)))
		case now := <-tick.C:
			if !exiting(pid) {
				zombieSince = time.Time{}
				continue
			}
			if zombieSince.IsZero() {
				zombieSince = now
			}
			if now.Sub(zombieSince) >= g.exitGrace {
				return g.end(pid, exited, fmt.Sprintf("%s has been exiting for %v, but a thread of it is stuck (in FUSE, if a connection below is listed)", filepath.Base(bin), g.exitGrace))
			}
		}
	}
}

// command is bin in a mount namespace of its own where this process may
// make one (root), and bin itself otherwise.
func (g *guard) command(bin string, args []string) *exec.Cmd {
	if os.Geteuid() != 0 || g.self == "" {
		return exec.Command(bin, args...)
	}
	cmd := exec.Command(g.self, append([]string{innerFlag, bin}, args...)...)
	// Go makes / private (MS_REC|MS_PRIVATE) in a new mount namespace,
	// so nothing mounted there reaches the parent's, nor the reverse.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return cmd
}

// end ends a binary that hangs: it asks for its stacks, aborts the FUSE
// connections mounted in its namespace, kills it, and waits for it a
// bounded time. It returns at least 1.
func (g *guard) end(pid int, exited <-chan error, why string) int {
	fmt.Fprintf(g.out, "\nfuseguard: %s: asking for its stacks (SIGQUIT), then aborting its FUSE connections\n", why)
	syscall.Kill(pid, syscall.SIGQUIT)
	select {
	case err := <-exited:
		return max(1, exitStatus(err))
	case <-time.After(5 * time.Second):
	}
	stop := time.After(giveUp)
	aborted := map[uint32]bool{}
	for {
		for _, m := range fuseMounts(pid) {
			if aborted[m.Conn] {
				continue
			}
			aborted[m.Conn] = true
			if err := fusectl.Abort(m.Conn); err != nil {
				fmt.Fprintf(g.out, "fuseguard: %s: %v\n", m.Point, err)
			} else {
				fmt.Fprintf(g.out, "fuseguard: aborted FUSE connection %d (%s)\n", m.Conn, m.Point)
			}
		}
		syscall.Kill(pid, syscall.SIGKILL)
		select {
		case err := <-exited:
			fmt.Fprintf(g.out, "fuseguard: the test binary has ended (%d FUSE connections aborted); failing it\n", len(aborted))
			return max(1, exitStatus(err))
		case <-stop:
			fmt.Fprintf(g.out, "fuseguard: the test binary (pid %d) still has not ended %v later; leaving it\n", pid, giveUp)
			return 1
		case <-time.After(time.Second):
		}
	}
}

// pipeOutput gives cmd pipes of its own for its output and copies them to
// this process's: a binary that cannot die keeps its end open, and go
// test, which reads this process's output, must see it end when this
// process exits. The channel is closed when both copies have ended; the
// write ends are closed once cmd has started (or failed to).
func pipeOutput(cmd *exec.Cmd) (<-chan struct{}, error) {
	cmd.Stdin = os.Stdin
	ro, wo, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	re, we, err := os.Pipe()
	if err != nil {
		ro.Close()
		wo.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = wo, we
	done := make(chan struct{})
	copied := make(chan struct{}, 2)
	for r, dst := range map[*os.File]*os.File{ro: os.Stdout, re: os.Stderr} {
		go func() { io.Copy(dst, r); r.Close(); copied <- struct{}{} }()
	}
	go func() { <-copied; <-copied; close(done) }()
	return done, nil
}

// testTimeout is the -test.timeout among a test binary's arguments, or 0.
func testTimeout(args []string) time.Duration {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "-test.timeout=")
		if !ok && a == "-test.timeout" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			d, _ := time.ParseDuration(v)
			return d
		}
	}
	return 0
}

// exiting reports whether pid is exiting: its leader is a zombie, or one
// of its threads has SIGKILL pending (exit_group sends it to every
// thread; one that stays in an uninterruptible wait keeps it pending).
func exiting(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "State":
				if t.Name() == strconv.Itoa(pid) && strings.HasPrefix(v, "Z") {
					return true
				}
			case "SigPnd", "ShdPnd":
				if m, err := strconv.ParseUint(v, 16, 64); err == nil && m&(1<<(unix.SIGKILL-1)) != 0 {
					return true
				}
			}
		}
	}
	return false
}

// fuseMounts lists the FUSE mounts in the mount namespace of pid's
// threads. A zombie leader has left its namespace, so each thread's
// table is read.
func fuseMounts(pid int) []mountinfo.FUSEMount {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	seen := map[uint32]bool{}
	var out []mountinfo.FUSEMount
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/mountinfo", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, m := range mountinfo.FUSE(b) {
			if !seen[m.Conn] {
				seen[m.Conn] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// exitStatus is a finished command's exit status.
func exitStatus(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	return 1
}

// inner runs inside the new namespace: it detaches the FUSE mounts the
// namespace inherited (copies of other processes' mounts, not ours to
// abort), then becomes the test binary.
func inner(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fuseguard: no binary to run")
		return 2
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		ms := mountinfo.FUSE(b)
		for i := len(ms) - 1; i >= 0; i-- {
			unix.Unmount(ms[i].Point, unix.MNT_DETACH)
		}
	}
	bin, err := exec.LookPath(args[0])
	if err == nil {
		err = unix.Exec(bin, args, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "fuseguard: exec %s: %v\n", args[0], err)
	return 1
}
