package fusefs

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// The callers of TestPermissionTableOverFUSE, against nodes owned by
// 65534:100.
var tableCallers = []struct {
	name string
	cred *syscall.Credential
}{
	{"owner", &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}},
	{"primary group", &syscall.Credential{Uid: 65533, Gid: 100, Groups: []uint32{}}},
	{"supplementary group", &syscall.Credential{Uid: 65533, Gid: 65533, Groups: []uint32{7, 100}}},
	{"none", &syscall.Credential{Uid: 65533, Gid: 65533, Groups: []uint32{7}}},
}

// tableModes is the sample of modes TestPermissionTableOverFUSE runs: every
// pair of group and other triplets (where the group's membership decides),
// with the owner triplet going round all eight values.
func tableModes() []fs.FileMode {
	var modes []fs.FileMode
	for i := range 64 {
		modes = append(modes, fs.FileMode(i%8<<6|i))
	}
	return modes
}

// permTableTree is a tree with, for each sampled mode M, an attribute fM
// and a directory dM of that mode, owned by 65534:100.
func permTableTree(t *testing.T) *kernfsim.Tree {
	t.Helper()
	s := testkit.Must(locking.New("rwsem", locking.Options{Grace: locking.GraceConfig{Tick: 100 * time.Microsecond}}))(t)
	tr := kernfsim.New(s, kernfsim.Options{})
	for _, m := range tableModes() {
		spec := kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: m, Uid: 65534, Gid: 100, Source: kernfsim.NewValue("v")}
		testkit.Must(tr.Add(tr.Root(), fmt.Sprintf("f%03o", m), spec))(t)
		spec = kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: m, Uid: 65534, Gid: 100}
		testkit.Must(tr.Add(tr.Root(), fmt.Sprintf("d%03o", m), spec))(t)
	}
	return tr
}

// permTableOps are the operations run on every node under mnt: access(2)
// with every mask, and an open for reading (an attribute) or a listing
// and a chdir (a directory).
func permTableOps(mnt string) []string {
	var ops []string
	for _, m := range tableModes() {
		f, d := filepath.Join(mnt, fmt.Sprintf("f%03o", m)), filepath.Join(mnt, fmt.Sprintf("d%03o", m))
		for mask := 1; mask <= 7; mask++ {
			ops = append(ops, "access|"+f+"|"+strconv.Itoa(mask), "access|"+d+"|"+strconv.Itoa(mask))
		}
		ops = append(ops, "read|"+f, "readdir|"+d, "chdir|"+d)
	}
	return ops
}

// TestPermissionTableOverFUSE checks that --permissions server decides as
// the kernel does under default_permissions (generic_permission), for
// real unprivileged callers: the owner, a member of the node's group by
// its primary or a supplementary group, and neither, each doing access(2)
// with every mask, opens, listings and chdirs on attributes and
// directories of a sample of modes (every group/other pair), on both
// transports. Issue 33: a supplementary member passed on the other bits
// where the group bits refuse.
func TestPermissionTableOverFUSE(t *testing.T) {
	testkit.RequireFUSE(t)
	helper := helperBinary(t)
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		got := map[Permissions][][]string{}
		var ops [2][]string
		for i, perms := range []Permissions{PermKernel, PermServer} {
			m := mountTest(t, permTableTree(t), MountOptions{Transport: uring.Config{Only: tp}, AllowOther: true, Options: Options{Permissions: perms}})
			ops[i] = permTableOps(reachable(t, m.Mountpoint))
			for _, c := range tableCallers {
				got[perms] = append(got[perms], runHelper(t, helper, c.cred, ops[i]))
			}
		}
		diffs := 0
		for ci, c := range tableCallers {
			for i, op := range ops[1] {
				if k, s := got[PermKernel][ci][i], got[PermServer][ci][i]; k != s {
					if diffs++; diffs <= 20 {
						t.Errorf("%s: %s: server mode %s, kernel mode %s", c.name, op, s, k)
					}
				}
			}
		}
		if diffs > 0 {
			t.Errorf("%d operations differ between --permissions server and kernel", diffs)
		}
	})
}
