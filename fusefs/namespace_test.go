package fusefs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// nsRow is one namespace operation and what sysfs answers it.
type nsRow struct {
	op   string   // the helper's operation
	args []string // "new", "new2" (missing names), "file", "dir" (existing ones)
	// root and user are what sysfs answers root and uid 65534 in a 0755
	// root directory, from fs/namei.c and fs/kernfs/dir.c (Linux 6.18);
	// where probe is set they are checked against this machine's /sys.
	root, user string
	// probe says the row may run on the real /sys: it changes no
	// existing entry (an existing one is only a link's source or
	// O_TMPFILE's directory), and sysfs must refuse it.
	probe bool
	// serverUser, if set, is what uid 65534 gets under --permissions
	// server instead of user: without default_permissions the kernel's
	// own permission calls pass, so it decides a check that it makes
	// before asking the server (CAP_MKNOD, the victim's type) where
	// sysfs refuses write permission on the directory first.
	serverUser string
}

var nsRows = []nsRow{
	{op: "mkdir", args: []string{"new"}, root: "EPERM", user: "EACCES", probe: true},
	{op: "mknod-reg", args: []string{"new"}, root: "EACCES", user: "EACCES", probe: true},
	{op: "mknod-fifo", args: []string{"new"}, root: "EPERM", user: "EACCES", probe: true},
	{op: "mknod-chr", args: []string{"new"}, root: "EPERM", user: "EACCES", probe: true, serverUser: "EPERM"},
	{op: "creat", args: []string{"new"}, root: "EACCES", user: "EACCES", probe: true},
	{op: "creat-excl", args: []string{"new"}, root: "EACCES", user: "EACCES", probe: true},
	{op: "tmpfile", args: []string{"dir"}, root: "EOPNOTSUPP", user: "EACCES", probe: true}, // makes no name; sysfs has no ->tmpfile
	{op: "symlink", args: []string{"new"}, root: "EPERM", user: "EACCES", probe: true},
	{op: "link", args: []string{"file", "new"}, root: "EPERM", user: "EPERM", probe: true},
	{op: "link", args: []string{"dir", "new"}, root: "EPERM", user: "EPERM", probe: true},
	{op: "link", args: []string{"new2", "new"}, root: "ENOENT", user: "ENOENT", probe: true},
	{op: "unlink", args: []string{"new"}, root: "ENOENT", user: "ENOENT", probe: true},
	{op: "rmdir", args: []string{"new"}, root: "ENOENT", user: "ENOENT", probe: true},
	{op: "rename", args: []string{"new2", "new"}, root: "ENOENT", user: "ENOENT", probe: true},
	{op: "mkdir", args: []string{"dir"}, root: "EEXIST", user: "EEXIST"},
	{op: "symlink", args: []string{"file"}, root: "EEXIST", user: "EEXIST"},
	{op: "unlink", args: []string{"file"}, root: "EPERM", user: "EACCES"},
	{op: "rmdir", args: []string{"dir"}, root: "EPERM", user: "EACCES"}, // kernfs does not look whether it is empty
	{op: "unlink", args: []string{"dir"}, root: "EISDIR", user: "EACCES", serverUser: "EISDIR"},
	{op: "rmdir", args: []string{"file"}, root: "ENOTDIR", user: "EACCES", serverUser: "ENOTDIR"},
	{op: "rename", args: []string{"file", "new"}, root: "EPERM", user: "EACCES"},
	{op: "rename", args: []string{"dir", "new"}, root: "EPERM", user: "EACCES"},
	{op: "rename", args: []string{"file", "file"}, root: "ok", user: "ok"}, // vfs_rename: the same inode
	{op: "rename-noreplace", args: []string{"file", "new"}, root: "EINVAL", user: "EACCES"},
}

// nsPlace names a directory like /sys/kernel: an existing 0444 root file
// and 0755 root directory in it, and two names that do not exist.
type nsPlace struct{ dir, file, sub, new, new2 string }

func (p nsPlace) op(r nsRow) string {
	f := []string{r.op}
	for _, a := range r.args {
		f = append(f, filepath.Join(p.dir, map[string]string{"new": p.new, "new2": p.new2, "file": p.file, "dir": p.sub}[a]))
	}
	return strings.Join(f, "|")
}

func (p nsPlace) ops(rows []nsRow) []string {
	var ops []string
	for _, r := range rows {
		ops = append(ops, p.op(r))
	}
	return ops
}

// TestNamespaceOpsMatchSysfs is issue 23's D12: mkdir, mknod, O_CREAT of
// a new name, O_TMPFILE, symlink, link, unlink, rmdir and rename answer as
// sysfs does (they answered ENOSYS, or what the kernel makes of it), for root and for a user, under both
// --permissions modes and on both transports; the tree is unchanged.
func TestNamespaceOpsMatchSysfs(t *testing.T) {
	testkit.RequireFUSE(t)
	helper := helperBinary(t)
	rootWant, userWant := sysfsAnswers(t, helper)
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		for _, perms := range []Permissions{PermServer, PermKernel} {
			t.Run("permissions="+string(perms), func(t *testing.T) {
				tr := nsTree(t)
				nodes := tr.Nodes()
				m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, AllowOther: true, Options: Options{Permissions: perms}})
				at := nsPlace{dir: filepath.Join(reachable(t, m.Mountpoint), "kernel"), file: "seqnum", sub: "mm", new: "x", new2: "y"}
				for _, u := range []struct {
					cred *syscall.Credential
					want []string
				}{{asRoot, rootWant}, {asNobody, userWant}} {
					got := runHelper(t, helper, u.cred, at.ops(nsRows))
					for i, r := range nsRows {
						want := u.want[i]
						if u.cred != nil && perms == PermServer && r.serverUser != "" {
							want = r.serverUser
						}
						if got[i] != want {
							t.Errorf("%s: %s: got %s, want %s", who(u.cred), at.op(r), got[i], want)
						}
					}
				}
				if tr.Nodes() != nodes {
					t.Errorf("the tree has %d nodes after the refused operations, want %d", tr.Nodes(), nodes)
				}
			})
		}
	})
}

// nsTree is a tree with kernel/ (0755), kernel/seqnum (0444) and
// kernel/mm/ (0755, not empty), as /sys/kernel has uevent_seqnum and mm.
func nsTree(t *testing.T) *kernfsim.Tree {
	t.Helper()
	tr := groupTree(t)
	k := testkit.Must(tr.Mkdir(tr.Root(), "kernel", 0o755))(t)
	testkit.Must(tr.AddAttr(k, "seqnum", 0o444, kernfsim.Static("1\n")))(t)
	mm := testkit.Must(tr.Mkdir(k, "mm", 0o755))(t)
	testkit.Must(tr.AddAttr(mm, "x", 0o444, kernfsim.Static("x\n")))(t)
	return tr
}

// sysfsAnswers is what root and uid 65534 get for each row: from this
// machine's /sys for the rows that may run there, when /sys is a
// writable sysfs with /sys/kernel/uevent_seqnum and mm; from the table
// otherwise. The probes name only missing entries as the thing to make,
// and must fail; one that does not fails the test (and is undone).
func sysfsAnswers(t *testing.T, helper string) (root, user []string) {
	for _, r := range nsRows {
		root, user = append(root, r.root), append(user, r.user)
	}
	sys := nsPlace{dir: "/sys/kernel", file: "uevent_seqnum", sub: "mm", new: "kernfsim-probe-" + strconv.Itoa(os.Getpid()), new2: "kernfsim-probe-" + strconv.Itoa(os.Getpid()) + "-2"}
	if why := sysUnprobeable(sys); why != "" {
		t.Logf("comparing with the table, not with /sys: %s", why)
		return root, user
	}
	var rows []nsRow
	var idx []int
	for i, r := range nsRows {
		if r.probe {
			rows, idx = append(rows, r), append(idx, i)
		}
	}
	for _, u := range []struct {
		cred *syscall.Credential
		want []string
	}{{asRoot, root}, {asNobody, user}} {
		got := runHelper(t, helper, u.cred, sys.ops(rows))
		for j, i := range idx {
			if got[j] == "ok" {
				t.Errorf("/sys as %s: %s succeeded (and was undone); sysfs must refuse it", who(u.cred), sys.op(rows[j]))
			}
			if got[j] != u.want[i] {
				t.Logf("/sys as %s: %s answers %s, the table says %s: comparing with /sys", who(u.cred), sys.op(rows[j]), got[j], u.want[i])
				u.want[i] = got[j]
			}
		}
	}
	for _, n := range []string{sys.new, sys.new2} {
		if _, err := os.Lstat(filepath.Join(sys.dir, n)); err == nil {
			t.Fatalf("/sys/kernel/%s exists after the probes", n)
		}
	}
	return root, user
}

// sysUnprobeable says why the rows may not run on /sys, or "".
func sysUnprobeable(p nsPlace) string {
	var st unix.Statfs_t
	switch err := unix.Statfs("/sys", &st); {
	case err != nil:
		return "statfs /sys: " + err.Error()
	case st.Type != unix.SYSFS_MAGIC:
		return "/sys is not a sysfs"
	case st.Flags&unix.ST_RDONLY != 0:
		return "/sys is mounted read-only"
	}
	for _, n := range []string{p.file, p.sub} {
		if _, err := os.Lstat(filepath.Join(p.dir, n)); err != nil {
			return err.Error()
		}
	}
	for _, n := range []string{p.new, p.new2} {
		if _, err := os.Lstat(filepath.Join(p.dir, n)); err == nil {
			return filepath.Join(p.dir, n) + " exists"
		}
	}
	return ""
}
