package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// nobody is the unprivileged user the permission tests run as.
var nobody = &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}

// TestPermissionsNonRoot runs /bin/cat and /bin/sh as uid 1000 against a
// mount with --allow-other, in both --permissions modes: it may read 0444
// and 0644 attributes, but not write root's 0644 attributes nor use the
// 0200 control files, and the tree is unchanged afterwards.
func TestPermissionsNonRoot(t *testing.T) {
	for _, perms := range []string{"kernel", "server"} {
		for _, lock := range locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters }) {
			t.Run("permissions="+perms+"/lock="+lock, func(t *testing.T) {
				t.Parallel()
				testPermissions(t, perms, lock)
			})
		}
	}
}

func testPermissions(t *testing.T, perms, lock string) {
	testkit.RequireFUSE(t)
	mnt := reachableMountpoint(t)
	startServer(t, mnt, append([]string{"--allow-other", "--permissions", perms, "--lock", lock}, smallTree...)...)
	p := func(rel string) string { return filepath.Join(mnt, rel) }
	require.NoError(t, os.WriteFile(p("bus/kernfsim/new_device"), []byte("dev0"), 0), "root: new_device")
	before := snapshot(t, mnt)

	for _, rel := range []string{"devices/system/cpu/cpu0/topology/core_id", "devices/kernfsim/dev0/value"} {
		want, err := os.ReadFile(p(rel))
		require.NoError(t, err, "root: read %s", rel)
		if out, msg, err := runAs(t, "/bin/cat", p(rel)); err != nil || out != string(want) {
			t.Errorf("uid 1000: cat %s: got %q, %v (%s); want %q", rel, out, err, msg, want)
		}
	}
	if _, msg, err := runAs(t, "/bin/cat", p("bus/kernfsim/new_device")); err == nil || !strings.Contains(msg, "Permission denied") {
		t.Errorf("uid 1000: cat bus/kernfsim/new_device (0200): got %v, %q; want Permission denied", err, msg)
	}
	for _, w := range []struct{ rel, data string }{
		{"devices/kernfsim/dev0/value", "1"},
		{"devices/system/cpu/cpu1/online", "0"},
		{"bus/kernfsim/new_device", "evil"},
		{"bus/kernfsim/delete_device", "dev0"},
	} {
		for _, script := range writeScripts {
			_, msg, err := runAs(t, "/bin/sh", "-c", script, "sh", w.data, p(w.rel))
			if err == nil || !strings.Contains(msg, "Permission denied") {
				t.Errorf("uid 1000: sh -c '%s' with %s, %s: got %v, %q; want Permission denied", script, w.data, w.rel, err, msg)
			}
		}
	}
	if _, msg, err := runAs(t, "/bin/sh", "-c", `chmod 666 "$1"`, "sh", p("devices/kernfsim/dev0/value")); err == nil || !strings.Contains(msg, "Operation not permitted") {
		t.Errorf("uid 1000: chmod 666 devices/kernfsim/dev0/value: got %v, %q; want Operation not permitted", err, msg)
	}

	if after := snapshot(t, mnt); !slices.Equal(after, before) {
		diffLines(t, after, before)
	}
}

// writeScripts write $1 to the file $2 in two ways: the shell's
// O_TRUNC open (the kernel may first send a truncating SETATTR, which
// alone can refuse it), and dd's plain O_WRONLY open, which only the
// permission check at open refuses.
var writeScripts = []string{
	`echo "$1" > "$2"`,
	`echo "$1" | dd of="$2" conv=notrunc status=none`,
}

// snapshot is every path of the mount (as walkMount lists it) and the
// contents of the attributes uid 1000 tries to write.
func snapshot(t *testing.T, mnt string) []string {
	lines := walkMount(t, mnt)
	for _, rel := range []string{"devices/kernfsim/dev0/value", "devices/system/cpu/cpu1/online"} {
		b, err := os.ReadFile(filepath.Join(mnt, rel))
		require.NoError(t, err, "root: read %s", rel)
		lines = append(lines, "content "+rel+" "+strings.TrimSpace(string(b)))
	}
	return lines
}

// reachableMountpoint is a new mountpoint whose parent directories uid
// 1000 can search.
func reachableMountpoint(t *testing.T) string {
	mnt := newMountpoint(t)
	dir := filepath.Dir(mnt)
	for _, d := range []string{dir, filepath.Dir(dir)} { // t.TempDir() and the test's temp dir
		require.NoError(t, os.Chmod(d, 0o755))
	}
	for d := mnt; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		if fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("uid 1000 cannot reach %s: %s is %v (set TMPDIR to a world-searchable directory)", mnt, d, fi.Mode())
		}
		if d == "/" {
			return mnt
		}
	}
}

// runAs runs a command as uid/gid 1000 and returns its stdout, its stderr
// and how it ended.
func runAs(t *testing.T, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	cmd.Dir = "/"
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s as uid 1000: still running after 10 s", name, strings.Join(args, " "))
	}
	return out.String(), errOut.String(), err
}
