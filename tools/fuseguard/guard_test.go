package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/fusectl"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestGuardEndsAHungFUSEClient runs a test binary that leaves a client
// blocked on its own server, which never answers, and times out: without
// the guard that binary cannot die and go test waits for it forever. The
// guard must end it, with a failure and the binary's stacks, within a
// bounded time. If the guard does not, the test ends the binary itself
// (the same abort, through fusectl) and fails.
func TestGuardEndsAHungFUSEClient(t *testing.T) {
	testkit.RequireFUSE(t)
	dir := t.TempDir()
	guardBin, victim := filepath.Join(dir, "fuseguard"), filepath.Join(dir, "victim.test")
	goCmd(t, "build", "-o", guardBin, ".")
	goCmd(t, "test", "-c", "-o", victim, "./testdata/victim")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.Command(guardBin, "-grace", "30s", "-exit-grace", "2s", victim, "-test.timeout=2s")
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-ctx.Done():
		endChildren(t, cmd.Process.Pid)
		t.Fatalf("the guard did not end the hung binary within 90 s; output:\n%s", out.String())
	}
	took := time.Since(start)
	if exitStatus(err) == 0 {
		t.Errorf("the guard exited 0 for a binary that hung; want a failure")
	}
	for _, want := range []string{"panic: test timed out after 2s", "fuseguard: aborted FUSE connection", "failing it"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the guard's output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("the hung binary ended in %v (exit %d)", took.Round(time.Millisecond), exitStatus(err))
}

// TestGuardPassesThrough checks that a binary that ends by itself keeps
// its exit status and its output.
func TestGuardPassesThrough(t *testing.T) {
	var out bytes.Buffer
	g := guard{grace: time.Minute, exitGrace: time.Second, out: &out}
	for _, code := range []int{0, 3} {
		if got := g.run("/bin/sh", []string{"-c", fmt.Sprintf("exit %d", code)}); got != code {
			t.Errorf("exit %d through the guard: got %d", code, got)
		}
	}
	if out.Len() != 0 {
		t.Errorf("the guard spoke for binaries that ended by themselves:\n%s", out.String())
	}
}

func TestTestTimeout(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s", "-test.v"}, 10 * time.Minute},
		{[]string{"-test.timeout", "3s"}, 3 * time.Second},
		{[]string{"-test.v"}, 0},
	} {
		if got := testTimeout(c.args); got != c.want {
			t.Errorf("testTimeout(%q): got %v, want %v", c.args, got, c.want)
		}
	}
}

// goCmd runs the go command in this package's directory.
func goCmd(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// endChildren aborts the FUSE connections of pid's children and kills
// them and pid: the test's own way out when the guard failed.
func endChildren(t *testing.T, pid int) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(b)) {
		child, _ := strconv.Atoi(f)
		for _, m := range fuseMounts(child) {
			if err := fusectl.Abort(m.Conn); err != nil {
				t.Logf("abort connection %d: %v", m.Conn, err)
			}
		}
		syscall.Kill(child, syscall.SIGKILL)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}
