package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// probeEnv makes a process of a binary that links fusefs the statfs probe
// of probeFUSE: at init it asks statfs of the path the variable holds,
// writes the errno ("0" for none) to stdout and exits, before main runs.
const probeEnv = "KERNFSIM_STATFS_PROBE"

func init() {
	if mnt, ok := os.LookupEnv(probeEnv); ok {
		os.Exit(probeChild(mnt))
	}
}

// probeChild is the probe process: statfs(mnt)'s errno on stdout.
func probeChild(mnt string) int {
	var st unix.Statfs_t
	err := unix.Statfs(mnt, &st)
	e, _ := err.(syscall.Errno)
	if err != nil && e == 0 {
		e = syscall.EIO
	}
	fmt.Println(int(e))
	return 0
}

// probeFUSE asks the server behind the FUSE mount at mnt for its statfs,
// which the kernel never answers from a cache, and returns the errno, or
// hung if no answer came within probeWait.
//
// The question is asked by a child process, never by a thread of this
// one: over io_uring a request is handed to the server's ring at once, so
// a stopped server leaves its caller in an uninterruptible wait that would
// keep this process from exiting. The child is this program itself
// (/proc/self/exe, with probeEnv set: see init), so no other program need
// be installed or on PATH. A child left so is not waited for; it ends
// when the connection does (which --force makes happen).
func probeFUSE(mnt string) (hung bool, err error) {
	cmd := exec.Command("/proc/self/exe")
	// GORACE: a build with -race would sleep 1 s at exit.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "GORACE=") }),
		probeEnv+"="+mnt, "GORACE=atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("statfs %s: starting the probe (this program, /proc/self/exe): %w", mnt, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return false, probeResult(mnt, stdout.String(), stderr.String(), err)
	case <-time.After(probeWait):
		cmd.Process.Kill()
		return true, nil
	}
}

// probeResult is the errno the probe child printed (nil for 0), or what
// went wrong with it.
func probeResult(mnt, out, errOut string, err error) error {
	n, perr := strconv.Atoi(strings.TrimSpace(out))
	switch {
	case err != nil || perr != nil:
		return fmt.Errorf("statfs %s: the probe failed (%v): %q", mnt, err, strings.TrimSpace(errOut))
	case n == 0:
		return nil
	}
	return syscall.Errno(n)
}
