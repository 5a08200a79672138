package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/locking"
)

// kernfsimBin is the kernfsim binary TestMain builds.
var kernfsimBin string

// raceBuild is set by race_test.go when the tests run with -race; the
// binary is then built with -race too, so a data race in the server fails
// the test that exercised it (the race detector exits 66).
var raceBuild bool

var allLocks = locking.Names

// smallTree are the tree flags of a small machine: fast to build and walk.
var smallTree = []string{"--cpus", "4", "--sockets", "1", "--mem-blocks", "8", "--netdevs", "1", "--disks", "1"}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kernfsim-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kernfsimBin = filepath.Join(dir, "kernfsim")
	code := 1
	if err := build(kernfsimBin, "github.com/kernfsim/kernfsim/cmd/kernfsim"); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// build runs go build for pkg into out.
func build(out, pkg string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	args := []string{"build", "-o", out}
	if raceBuild {
		args = append(args, "-race")
	}
	cmd := exec.Command(gobin, append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, b)
	}
	return nil
}

// kernfsimCmd is the command kernfsim args. A binary built with -race
// would sleep 1 s at exit (GORACE atexit_sleep_ms), which would count in
// the SIGTERM-to-exit times: it is told not to.
func kernfsimCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, kernfsimBin, args...)
	if raceBuild && os.Getenv("GORACE") == "" {
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	}
	return cmd
}

// inShell makes cmd run through sh after the shell command prefix (say,
// "ulimit -n 10"), with the same arguments.
func inShell(cmd *exec.Cmd, prefix string) {
	cmd.Args = append([]string{"sh", "-c", prefix + `; exec "$0" "$@"`}, cmd.Args...)
	cmd.Args[3] = cmd.Path
	cmd.Path = "/bin/sh"
}

// result is how a finished kernfsim command ended.
type result struct {
	stdout, stderr string
	code           int
}

// runKernfsim runs kernfsim with args to completion. A command still
// running after 15 s (say, a mount that should have been refused) gets
// SIGTERM and fails the test.
func runKernfsim(t testing.TB, args ...string) result {
	t.Helper()
	return runKernfsimShell(t, "", args...)
}

// runKernfsimShell is runKernfsim with kernfsim run by sh after the shell
// command prefix, if not "".
func runKernfsimShell(t testing.TB, prefix string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := kernfsimCmd(ctx, args...)
	if prefix != "" {
		inShell(cmd, prefix)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kernfsim %s: still running after 15 s (stdout %q, stderr %q)", strings.Join(args, " "), stdout.String(), stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("kernfsim %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}
