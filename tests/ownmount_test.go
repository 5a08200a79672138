package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSIGTERMLeavesACoveringMount mounts a tmpfs on top of a serving
// mount: SIGTERM must leave the tmpfs and its file alone (an unmount by
// path would remove the top mount, whoever owns it), stop the server
// promptly, and say that its own dead mount stays beneath.
func TestSIGTERMLeavesACoveringMount(t *testing.T) {
	requireFUSE(t)
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) {
			mnt := newMountpoint(t)
			s := startServer(t, mnt, append(append([]string{}, tp.args...), smallTree...)...)
			if err := unix.Mount("kernfsim-test", mnt, "tmpfs", 0, "size=1m"); err != nil {
				t.Fatalf("mount tmpfs on %s: %v", mnt, err)
			}
			t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
			file := filepath.Join(mnt, "f")
			if err := os.WriteFile(file, []byte("kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
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
	requireFUSE(t)
	mnt := newMountpoint(t)
	caches := []string{"--attr-timeout", "30s", "--entry-timeout", "30s"}
	s := startServer(t, mnt, append(caches, smallTree...)...)
	if _, err := os.Stat(mnt); err != nil {
		t.Fatal(err)
	}
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
	requireFUSE(t)
	mnt := newMountpoint(t)
	s := startServer(t, mnt, smallTree...)
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Signal(syscall.SIGCONT) })
	if r := runKernfsim(t, "mount", mnt); r.code != 2 || !strings.Contains(r.stderr, "does not answer") {
		t.Errorf("mount on a stopped server's mount: got exit %d, stderr %q; want 2 and \"does not answer\"", r.code, r.stderr)
	}
	s2 := startServer(t, mnt, append([]string{"--force"}, smallTree...)...)
	s2.wantStatus(t, "rwsem")
	s2.stop(t)
}
