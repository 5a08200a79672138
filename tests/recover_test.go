package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// TestKillThenForce kills the server with SIGKILL, leaving a dead mount:
// stat says ENOTCONN, mount without --force refuses (exit 2, naming
// --force), mount --force serves again.
func TestKillThenForce(t *testing.T) {
	testkit.RequireFUSE(t)
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) { testKillThenForce(t, tp.args) })
	}
}

func testKillThenForce(t *testing.T, transport []string) {
	mnt := newMountpoint(t)
	killed := startServer(t, mnt, append(append([]string{}, transport...), smallTree...)...)
	core := filepath.Join(mnt, "devices/system/cpu/cpu0/topology/core_id")
	if _, err := os.ReadFile(core); err != nil {
		t.Fatalf("before kill -9: %v", err)
	}
	killed.signal(t, syscall.SIGKILL)
	if _, err := os.Stat(mnt); !kernfsim.Disconnected(err) {
		t.Fatalf("stat %s after kill -9: got %v, want ENOTCONN, ECONNABORTED or ECANCELED (kernfsim.Disconnected)", mnt, err)
	}
	for _, args := range [][]string{{"mount", mnt}, {"stats", mnt}} {
		r := runKernfsim(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--force") {
			t.Errorf("kernfsim %s on a dead mount: got exit %d, stderr %q; want exit 2 and a message naming --force", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	s := startServer(t, mnt, append(append([]string{"--force"}, transport...), smallTree...)...)
	s.wantStatus(t, "rwsem")
	if b, err := os.ReadFile(core); err != nil || string(b) != "0\n" {
		t.Errorf("read %s after --force: got %q, %v; want \"0\\n\"", core, b, err)
	}
	s.stop(t)
}

// TestForceWithoutStat is TestKillThenForce with nothing on PATH (no
// stat(1)): the dead mount is still told from a live one, refused
// without --force and recovered with it. Issue 33: it was called "already
// a mount" and kept.
func TestForceWithoutStat(t *testing.T) {
	testkit.RequireFUSE(t)
	mnt := newMountpoint(t)
	noPath := "export PATH=" + t.TempDir()
	killed := startServer(t, mnt, smallTree...)
	killed.signal(t, syscall.SIGKILL)
	if r := runKernfsimShell(t, noPath, "mount", mnt); r.code != 2 || !strings.Contains(r.stderr, "dead FUSE mount") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("kernfsim mount on a dead mount, empty PATH: got exit %d, stderr %q; want exit 2, \"dead FUSE mount\" and --force", r.code, r.stderr)
	}
	s := startServerIn(t, noPath, mnt, append([]string{"--force"}, smallTree...)...)
	s.wantStatus(t, "rwsem")
	if r := runKernfsimShell(t, noPath, "mount", mnt); r.code != 2 || !strings.Contains(r.stderr, "already a mount") {
		t.Errorf("kernfsim mount on a live mount, empty PATH: got exit %d, stderr %q; want exit 2, \"already a mount\"", r.code, r.stderr)
	}
	s.stop(t)
}

// TestUnmountFromOutside unmounts a serving mount with umount(2): the
// server notices, says so and exits 1.
func TestUnmountFromOutside(t *testing.T) {
	testkit.RequireFUSE(t)
	s := startServer(t, newMountpoint(t), smallTree...)
	require.NoError(t, unix.Unmount(s.mnt, 0), "umount %s", s.mnt)
	select {
	case <-s.done:
	case <-time.After(exitDeadline):
		t.Fatalf("the server still runs %v after its mount was unmounted", exitDeadline)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(s.stderr.String(), "unmounted from outside") {
		t.Errorf("got exit %d, stderr %q; want exit 1 and \"unmounted from outside\"", code, s.stderr)
	}
}
