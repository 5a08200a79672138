package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestMountErrors checks that `kernfsim mount` refuses what it cannot
// serve with exit status 2 and a message naming the problem, and mounts
// nothing.
func TestMountErrors(t *testing.T) {
	testkit.RequireFUSE(t)
	tests := []struct {
		name  string
		mnt   func(t *testing.T) string // the mountpoint to use
		flags []string
		want  []string // in stderr
	}{
		{"missing", missingDir, nil, []string{"does not exist"}},
		{"file", regularFile, nil, []string{"not a directory"}},
		{"not empty", nonEmptyDir, nil, []string{"not empty"}},
		{"live mount", liveMount, nil, []string{"already a mount"}},
		{"live mount via symlink", liveMountViaSymlink, nil, []string{"already a mount"}},
		{"lock", emptyDir, []string{"--lock", "spin"}, []string{"--lock", "spin", "mutex, rwsem, rcu, none"}},
		{"entry timeout", emptyDir, []string{"--entry-timeout", "-1s"}, []string{"--entry-timeout", "-1s"}},
		{"permissions", emptyDir, []string{"--permissions", "foo"}, []string{"--permissions", "foo", "kernel, server"}},
		{"pprof", emptyDir, []string{"--pprof", "0.0.0.0:6060"}, []string{"--pprof", "loopback", "--pprof-any"}},
		{"cpus", emptyDir, []string{"--cpus", "0"}, []string{"--cpus", "0"}},
		{"defer-taskrun on devfuse", emptyDir, []string{"--transport", "devfuse", "--uring-defer-taskrun"}, []string{"--uring-defer-taskrun", "--transport devfuse"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mnt := tt.mnt(t)
			r := runKernfsim(t, append(append([]string{"mount", mnt}, smallTree...), tt.flags...)...)
			if r.code != 2 {
				t.Errorf("exit status: got %d, want 2 (stderr %q)", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr: got %q, want it to mention %q", r.stderr, w)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout: got %q, want nothing (no status line)", r.stdout)
			}
		})
	}
}

func missingDir(t *testing.T) string { return filepath.Join(newMountpoint(t), "nosuch") }

func emptyDir(t *testing.T) string {
	mnt := newMountpoint(t)
	t.Cleanup(func() {
		if isMounted(t, mnt) {
			t.Errorf("%s was mounted by a refused command", mnt)
		}
	})
	return mnt
}

func regularFile(t *testing.T) string {
	p := filepath.Join(newMountpoint(t), "file")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	return p
}

func nonEmptyDir(t *testing.T) string {
	mnt := emptyDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "file"), []byte("x"), 0o644))
	return mnt
}

// liveMount is a mountpoint a running kernfsim serves; the refused second
// server must leave it serving.
func liveMount(t *testing.T) string {
	s := startServer(t, newMountpoint(t), smallTree...)
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(s.mnt, "kernel/kernfsim/stats")); err != nil {
			t.Errorf("the first server no longer serves after a refused second mount: %v", err)
		}
	})
	return s.mnt
}

// liveMountViaSymlink names a live mount through a symlink to it.
func liveMountViaSymlink(t *testing.T) string {
	mnt := liveMount(t)
	link := filepath.Join(filepath.Dir(mnt), "link")
	require.NoError(t, os.Symlink(mnt, link))
	return link
}
