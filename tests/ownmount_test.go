package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// TestSIGTERMLeavesACoveringMount mounts a tmpfs on top of a serving
// mount: SIGTERM must leave the tmpfs and its file alone (an unmount by
// path would remove the top mount, whoever owns it), stop the server
// promptly, and say that its own dead mount stays beneath.
func TestSIGTERMLeavesACoveringMount(t *testing.T) {
	testkit.RequireFUSE(t)
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) {
			mnt := newMountpoint(t)
			s := startServer(t, mnt, append(append([]string{}, tp.args...), smallTree...)...)
			require.NoError(t, unix.Mount("kernfsim-test", mnt, "tmpfs", 0, "size=1m"), "mount tmpfs on %s", mnt)
			t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
			file := filepath.Join(mnt, "f")
			require.NoError(t, os.WriteFile(file, []byte("kept\n"), 0o644))
			s.signal(t, syscall.SIGTERM)
			if b, err := os.ReadFile(file); err != nil || string(b) != "kept\n" {
				t.Errorf("the covering tmpfs's file after SIGTERM to the server beneath: got %q, %v; want it kept", b, err)
			}
			if code := s.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(s.stderr.String(), "covers") {
				t.Errorf("got exit %d, stderr %q; want exit 1 and a message that another mount covers the server's", code, s.stderr)
			}
		})
	}
}

// TestForceRecoversACachedDeadMount kills a server whose root attribute
// the kernel caches (--attr-timeout): a stat of the root still answers,
// so the dead-mount check must ask something no cache answers.
func TestForceRecoversACachedDeadMount(t *testing.T) {
	testkit.RequireFUSE(t)
	mnt := newMountpoint(t)
	caches := []string{"--attr-timeout", "30s", "--entry-timeout", "30s"}
	s := startServer(t, mnt, append(caches, smallTree...)...)
	testkit.Must(os.Stat(mnt))(t)
	s.signal(t, syscall.SIGKILL)
	if r := runKernfsim(t, "mount", mnt); r.code != 2 || !strings.Contains(r.stderr, "dead FUSE mount") {
		t.Errorf("mount on a dead mount with a cached root: got exit %d, stderr %q; want 2 and \"dead FUSE mount\"", r.code, r.stderr)
	}
	s2 := startServer(t, mnt, append(append([]string{"--force"}, caches...), smallTree...)...)
	s2.wantStatus(t, "rwsem")
	s2.stop(t)
}

// TestForceOnAStoppedServer stops a server with SIGSTOP: a mount on its
// mountpoint must not wait for it forever. Without --force it exits 2
// within seconds naming the unanswering server; with --force it aborts
// the connection and serves the mountpoint.
func TestForceOnAStoppedServer(t *testing.T) {
	testkit.RequireFUSE(t)
	mnt := newMountpoint(t)
	s := startServer(t, mnt, smallTree...)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { s.cmd.Process.Signal(syscall.SIGCONT) })
	if r := runKernfsim(t, "mount", mnt); r.code != 2 || !strings.Contains(r.stderr, "does not answer") {
		t.Errorf("mount on a stopped server's mount: got exit %d, stderr %q; want 2 and \"does not answer\"", r.code, r.stderr)
	}
	s2 := startServer(t, mnt, append([]string{"--force"}, smallTree...)...)
	s2.wantStatus(t, "rwsem")
	s2.stop(t)
}

// TestSIGTERMWithABindMount bind-mounts a serving mount elsewhere: on
// SIGTERM the unmount of the mountpoint leaves the connection serving
// through the bind, so the server aborts it (fusectl) and says which
// mounts kept it; the bind then answers as a dead mount. Issue 33: it
// waited 2 s and said "the connection was aborted" although nothing had.
func TestSIGTERMWithABindMount(t *testing.T) {
	testkit.RequireFUSE(t)
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) {
			mnt, bind := newMountpoint(t), newMountpoint(t)
			s := startServer(t, mnt, append(append([]string{}, tp.args...), smallTree...)...)
			require.NoError(t, unix.Mount(mnt, bind, "", unix.MS_BIND, ""), "mount --bind %s %s", mnt, bind)
			t.Cleanup(func() { unix.Unmount(bind, unix.MNT_DETACH) })
			s.signal(t, syscall.SIGTERM)
			if code := s.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(s.stderr.String(), "bind mounts at "+bind) ||
				!strings.Contains(s.stderr.String(), "aborted through fusectl") {
				t.Errorf("got exit %d, stderr %q; want exit 1 and a message naming the bind mount %s and the abort", code, s.stderr, bind)
			}
			if _, err := os.Stat(filepath.Join(bind, "devices")); !kernfsim.Disconnected(err) {
				t.Errorf("stat through the bind mount after SIGTERM: got %v, want a dead connection (kernfsim.Disconnected)", err)
			}
			if isMounted(t, mnt) {
				t.Errorf("%s is still mounted after SIGTERM", mnt)
			}
		})
	}
}
