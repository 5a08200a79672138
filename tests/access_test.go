package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestWithoutFUSEAccess runs both commands as user 65534, which cannot
// mount: with no fusermount3, and with one that refuses. Each exits 2
// saying why and what to do (run as root; loadgen also: --sim), with no
// word of unmounting what was never mounted, and leaves nothing behind.
func TestWithoutFUSEAccess(t *testing.T) {
	testkit.RequireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to run commands as another user")
	}
	dir := worldDir(t)
	for _, bin := range []string{kernfsimBin, loadgenBin(t)} {
		copyFile(t, bin, filepath.Join(dir, filepath.Base(bin)))
	}
	refusing := filepath.Join(dir, "refusing")
	os.Mkdir(refusing, 0o755)
	os.WriteFile(filepath.Join(refusing, "fusermount3"),
		[]byte("#!/bin/sh\necho 'fusermount3: mount failed: Operation not permitted' >&2\nexit 1\n"), 0o755)
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o777)
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"no fusermount3", dir, []string{"not root", "fusermount3", "run as root", "fuse3"}},
		{"fusermount3 refuses", refusing + ":/usr/bin:/bin", []string{"FUSE mount was refused", "run as root", "fusermount3 is setuid root"}},
	} {
		t.Run(tc.name+"/kernfsim", func(t *testing.T) {
			r := runAsNobody(t, tc.path, dir, filepath.Join(dir, "kernfsim"), "mount", mnt)
			checkRefusal(t, r, tc.want)
		})
		t.Run(tc.name+"/loadgen", func(t *testing.T) {
			r := runAsNobody(t, tc.path, dir, filepath.Join(dir, "loadgen"), "--threads", "1", "--times", "10", "--cpus", "4", "--sockets", "1")
			checkRefusal(t, r, append(tc.want, "--sim"))
			if left, _ := filepath.Glob(filepath.Join(dir, "loadgen-kernfsim-*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestNoDevFUSE runs kernfsim mount where /dev has no fuse device: an
// empty /dev in a mount namespace of its own (unshare -m, private
// propagation), never the test's own.
func TestNoDevFUSE(t *testing.T) {
	testkit.RequireFUSE(t)
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and unshare (util-linux): %v", err)
	}
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Skip(err)
	}
	mnt := newMountpoint(t)
	// The shell mounts over /dev only once it sees a mount namespace other
	// than this process's.
	script := `[ "$(readlink /proc/self/ns/mnt)" != "$1" ] || { echo "unshare gave no new mount namespace" >&2; exit 99; }
mount -t tmpfs none /dev || exit 98
shift; exec "$@"`
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", ns,
		kernfsimBin, "mount", mnt)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code == 98 || code == 99 {
		t.Skipf("cannot give kernfsim an empty /dev here (%d): %s", code, stderr.String())
	}
	checkRefusal(t, result{stderr: stderr.String(), code: code}, []string{"no /dev/fuse", "modprobe fuse"})
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("this namespace lost /dev/fuse: %v", err)
	}
}

func checkRefusal(t *testing.T, r result, want []string) {
	t.Helper()
	if r.code != 2 {
		t.Errorf("exit status %d, want 2; stderr:\n%s", r.code, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	for _, bad := range []string{"mtab", "unmounting", "exited with code 256\n"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr has %q:\n%s", bad, r.stderr)
		}
	}
}

// runAsNobody runs bin with args as user 65534 with PATH and TMPDIR.
func runAsNobody(t *testing.T, path, tmp, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + path, "TMPDIR=" + tmp, "HOME=/"}
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// worldDir is a directory every user may use, removed afterwards.
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kernfsim-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o1777))
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	require.NoError(t, err)
}
