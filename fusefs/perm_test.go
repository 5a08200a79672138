package fusefs

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// The callers the permission tests run children as.
var (
	asRoot   = (*syscall.Credential)(nil)
	asNobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
	asMember = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{100}} // in group 100 by a supplementary group only
)

// helperEnv makes the test binary a helper that runs the operations
// given after "--" and prints one result per line ("ok" or the errno's
// name); see TestPermHelper.
const helperEnv = "KERNFSIM_PERM_HELPER"

// TestPermHelper is not a test: run with helperEnv=1, it is the child the
// permission tests run as another user. Each argument is one operation,
// its fields separated by "|": "read|P", "write|P|DATA" (an O_TRUNC
// open), "readdir|P", "access-r|P", "chmod|P|OCTAL", "mkdir|P",
// "mknod-reg|P", "mknod-fifo|P", "mknod-chr|P", "creat|P", "creat-excl|P",
// "access|P|MASK" (octal R_OK|W_OK|X_OK), "chdir|P", "tmpfile|DIR", "symlink|P", "link|OLD|NEW", "unlink|P", "rmdir|P", "rename|OLD|NEW",
// "rename-noreplace|OLD|NEW". An operation that unexpectedly creates
// something removes it again.
func TestPermHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the permission tests' child process")
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	for _, op := range args[1:] {
		f := strings.Split(op, "|")
		res := "ok"
		if err := helperOp(f[0], f[1:]); err != nil {
			res = "error " + err.Error()
			if e := (syscall.Errno(0)); errors.As(err, &e) {
				res = unix.ErrnoName(e)
			}
		}
		os.Stdout.WriteString(res + "\n")
	}
	os.Exit(0)
}

func helperOp(op string, a []string) error {
	created := func(err error) error {
		if err == nil {
			os.Remove(a[len(a)-1])
		}
		return err
	}
	switch op {
	case "read":
		_, err := os.ReadFile(a[0])
		return err
	case "write":
		return os.WriteFile(a[0], []byte(a[1]), 0)
	case "readdir":
		_, err := os.ReadDir(a[0])
		return err
	case "access-r":
		return unix.Access(a[0], unix.R_OK)
	case "access":
		m, _ := strconv.ParseUint(a[1], 8, 32)
		return unix.Faccessat(unix.AT_FDCWD, a[0], uint32(m), 0)
	case "chdir":
		return unix.Chdir(a[0])
	case "chmod":
		m, _ := strconv.ParseUint(a[1], 8, 32)
		return unix.Chmod(a[0], uint32(m))
	case "mkdir":
		return created(unix.Mkdir(a[0], 0o755))
	case "mknod-reg":
		return created(unix.Mknod(a[0], unix.S_IFREG|0o600, 0))
	case "mknod-fifo":
		return created(unix.Mknod(a[0], unix.S_IFIFO|0o600, 0))
	case "mknod-chr":
		return created(unix.Mknod(a[0], unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))))
	case "creat", "creat-excl":
		flags := unix.O_CREAT | unix.O_WRONLY
		if op == "creat-excl" {
			flags |= unix.O_EXCL
		}
		fd, err := unix.Open(a[0], flags, 0o600)
		if err == nil {
			unix.Close(fd)
		}
		return created(err)
	case "tmpfile":
		fd, err := unix.Open(a[0], unix.O_TMPFILE|unix.O_WRONLY, 0o600)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "symlink":
		return created(unix.Symlink("target", a[0]))
	case "link":
		return created(unix.Link(a[0], a[1]))
	case "unlink":
		return unix.Unlink(a[0])
	case "rmdir":
		return unix.Rmdir(a[0])
	case "rename":
		return unix.Rename(a[0], a[1])
	case "rename-noreplace":
		return unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_NOREPLACE)
	}
	return errors.New("unknown operation " + op)
}

// helperBinary is a copy of this test binary that every user may run.
func helperBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := reachable(t, t.TempDir())
	path := filepath.Join(dir, "helper.test")
	in := testkit.Must(os.Open(self))(t)
	defer in.Close()
	out := testkit.Must(os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755))(t)
	testkit.Must(io.Copy(out, in))(t)
	require.NoError(t, out.Close())
	return path
}

// reachable makes dir and its parent (t.TempDir's) searchable by every
// user and checks that the rest of the way is.
func reachable(t *testing.T, dir string) string {
	t.Helper()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("other users cannot reach %s through %s (%v, %v): set TMPDIR to a world-searchable directory", dir, d, fi.Mode(), err)
		}
	}
	return dir
}

// runHelper runs ops in one child as cred (nil: as this process, root)
// and returns a result per op.
func runHelper(t *testing.T, helper string, cred *syscall.Credential, ops []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper, append([]string{"-test.run=^TestPermHelper$", "--"}, ops...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Dir = "/"
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if err != nil || len(got) != len(ops) {
		t.Fatalf("helper %v as %s: %v; stdout %q, stderr %q", ops, who(cred), err, out, stderr.String())
	}
	return got
}

func who(c *syscall.Credential) string {
	switch {
	case c == nil:
		return "root"
	case len(c.Groups) == 0:
		return "uid 65534"
	}
	return "uid 65534 in group 100"
}

// TestSupplementaryGroupsOverFUSE is issue 23's D6: root makes a
// directory 0750 root:100 holding an attribute 0640 root:100 and a
// writable one 0660 root:100 (chown and chmod over the mount). A caller
// in group 100 by a supplementary group only may search, list, read and
// write them under both --permissions modes and on both transports, as
// on sysfs; without the group it is refused EACCES.
func TestSupplementaryGroupsOverFUSE(t *testing.T) {
	testkit.RequireFUSE(t)
	helper := helperBinary(t)
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		for _, perms := range []Permissions{PermServer, PermKernel} {
			t.Run("permissions="+string(perms), func(t *testing.T) { testSupplementaryGroups(t, helper, tp, perms) })
		}
	})
}

func testSupplementaryGroups(t *testing.T, helper string, tp uring.Kind, perms Permissions) {
	tr := groupTree(t)
	m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, AllowOther: true, Options: Options{Permissions: perms}})
	mnt := reachable(t, m.Mountpoint)
	p := func(rel string) string { return filepath.Join(mnt, rel) }
	for _, c := range []struct {
		path        string
		uid, gid    int
		mode        os.FileMode
		wantModeStr string
	}{
		{"grp", 0, 100, 0o750, "drwxr-x---"},
		{"grp/secret", 0, 100, 0o640, "-rw-r-----"},
		{"grp/value", 0, 100, 0o660, "-rw-rw----"},
	} {
		require.NoError(t, os.Chown(p(c.path), c.uid, c.gid), "root: chown %s", c.path)
		require.NoError(t, os.Chmod(p(c.path), c.mode), "root: chmod %s", c.path)
		fi := testkit.Must(os.Stat(p(c.path)))(t)
		if fi.Mode().String() != c.wantModeStr || fi.Sys().(*syscall.Stat_t).Gid != 100 {
			t.Fatalf("root: after chown and chmod %s: got %v group %d, want %s group 100", c.path, fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid, c.wantModeStr)
		}
	}
	ops := []string{"readdir|" + p("grp"), "access-r|" + p("grp/secret"), "read|" + p("grp/secret"), "write|" + p("grp/value") + "|42", "read|" + p("open")}
	for _, c := range []struct {
		cred *syscall.Credential
		want []string
	}{
		{asMember, []string{"ok", "ok", "ok", "ok", "ok"}},
		{asNobody, []string{"EACCES", "EACCES", "EACCES", "EACCES", "ok"}},
	} {
		reads := callerGroups.reads.Load()
		got := runHelper(t, helper, c.cred, ops)
		for i := range ops {
			if got[i] != c.want[i] {
				t.Errorf("%s: %s: got %s, want %s", who(c.cred), ops[i], got[i], c.want[i])
			}
		}
		if perms == PermKernel && callerGroups.reads.Load() != reads {
			t.Errorf("%s under default_permissions: the server read /proc %d times, want 0 (the kernel checks)", who(c.cred), callerGroups.reads.Load()-reads)
		}
	}
	if b, err := os.ReadFile(p("grp/value")); err != nil || string(b) != "42" {
		t.Errorf("root: grp/value after the member's write: got %q, %v; want \"42\"", b, err)
	}
	reads := callerGroups.reads.Load()
	runHelper(t, helper, asNobody, []string{"read|" + p("open"), "read|" + p("open"), "access-r|" + p("open")})
	if n := callerGroups.reads.Load() - reads; n != 0 {
		t.Errorf("uid 65534 reading a 0444 attribute: the server read /proc %d times, want 0 (only a refusal a group could turn reads it)", n)
	}
}

// groupTree is a tree with grp/ (0755 root), grp/secret (0444) and
// grp/value (0644, writable) for root to chown and chmod, and open
// (0444), which anyone may read.
func groupTree(t *testing.T) *kernfsim.Tree {
	t.Helper()
	s := testkit.Must(locking.New("rcu", locking.Options{Grace: locking.GraceConfig{Tick: 100 * time.Microsecond}}))(t)
	tr := kernfsim.New(s, kernfsim.Options{})
	grp := testkit.Must(tr.Mkdir(tr.Root(), "grp", 0o755))(t)
	testkit.Must(tr.AddAttr(grp, "secret", 0o444, kernfsim.Static("s\n")))(t)
	testkit.Must(tr.AddAttr(grp, "value", 0o644, kernfsim.NewValue("0")))(t)
	testkit.Must(tr.AddAttr(tr.Root(), "open", 0o444, kernfsim.Static("o\n")))(t)
	return tr
}

// TestChmodKeepsSpecialBits checks over the mount that chmod keeps the
// setuid, setgid and sticky bits, as kernfs does, and that the setgid bit
// set by an owner outside the group goes (setattr_prepare), where a
// supplementary group counts as in the group.
func TestChmodKeepsSpecialBits(t *testing.T) {
	testkit.RequireFUSE(t)
	helper := helperBinary(t)
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		for _, perms := range []Permissions{PermServer, PermKernel} {
			t.Run("permissions="+string(perms), func(t *testing.T) { testChmodKeepsSpecialBits(t, helper, tp, perms) })
		}
	})
}

func testChmodKeepsSpecialBits(t *testing.T, helper string, tp uring.Kind, perms Permissions) {
	tr := groupTree(t)
	m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, AllowOther: true, Options: Options{Permissions: perms}})
	mnt := reachable(t, m.Mountpoint)
	p := func(rel string) string { return filepath.Join(mnt, rel) }
	mode := func(rel string) uint32 {
		t.Helper()
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(p(rel), &st))
		return st.Mode &^ unix.S_IFMT
	}
	for _, c := range []struct {
		path string
		mode uint32
	}{
		{"grp/secret", 0o4755},
		{"grp/secret", 0o2755},
		{"grp/secret", 0o7644},
		{"grp", 0o1777},
		{"grp/secret", 0o644},
	} {
		require.NoError(t, unix.Chmod(p(c.path), c.mode), "root: chmod %o %s", c.mode, c.path)
		if got := mode(c.path); got != c.mode {
			t.Errorf("root: chmod %o %s: got mode %o, want %o", c.mode, c.path, got, c.mode)
		}
	}
	testkit.Must(0, os.Chown(p("grp/value"), 65534, 100))(t)
	for _, c := range []struct {
		cred *syscall.Credential
		want uint32
	}{
		{asNobody, 0o644},
		{asMember, 0o2644},
	} {
		if got := runHelper(t, helper, c.cred, []string{"chmod|" + p("grp/value") + "|2644"}); got[0] != "ok" {
			t.Fatalf("%s: chmod 2644 of its own file: %s", who(c.cred), got[0])
		}
		if got := mode("grp/value"); got != c.want {
			t.Errorf("%s: chmod 2644 of its own file of group 100: got mode %o, want %o", who(c.cred), got, c.want)
		}
	}
}
