package kernfsim

import (
	"fmt"
	"io/fs"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// refCaller is a caller of the reference check: fsuid, fsgid and
// supplementary groups.
type refCaller struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32
}

// refResult is what the reference check decided, and whether it asked
// for the caller's supplementary groups (in_group_p past the fsgid).
type refResult struct {
	granted     bool
	askedGroups bool
}

// refGenericPermission is Linux's generic_permission (fs/namei.c, v6.12)
// for an inode without ACLs, written from the kernel's code line by line,
// for a caller whose only capabilities are root's (fsuid 0 has
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH). mask is MAY_READ (4),
// MAY_WRITE (2), MAY_EXEC (1) or a combination.
func refGenericPermission(mode uint32, uid, gid uint32, isDir bool, mask uint32, c refCaller) refResult {
	var res refResult
	// in_group_p (kernel/groups.c): the fsgid, then groups_search.
	inGroupP := func(g uint32) bool {
		if c.gid == g {
			return true
		}
		res.askedGroups = true
		return slices.Contains(c.groups, g)
	}
	// acl_permission_check
	acl := func() bool {
		mode := mode
		if (mask&7)*0o111&^mode == 0 {
			return true // everybody has the rights, no ACLs
		}
		if uid == c.uid {
			mask := mask & 7
			mode >>= 6
			return mask&^mode == 0
		}
		mask := mask & 7
		if mask&(mode^(mode>>3)) != 0 {
			if inGroupP(gid) {
				mode >>= 3
			}
		}
		return mask&^mode == 0
	}
	res.granted = acl()
	if res.granted || c.uid != 0 {
		return res
	}
	// generic_permission's capability overrides, for root.
	if isDir {
		res.granted = true // CAP_DAC_READ_SEARCH or CAP_DAC_OVERRIDE
		return res
	}
	res.granted = mask&uint32(MayExec) == 0 || mode&0o111 != 0 // CAP_DAC_OVERRIDE; read alone: CAP_DAC_READ_SEARCH
	return res
}

// permCallers are the callers of TestPermissionTable, against a node
// owned by 1000:100.
var permCallers = []refCaller{
	{name: "owner", uid: 1000, gid: 1000},
	{name: "primary group", uid: 2000, gid: 100},
	{name: "supplementary group", uid: 2000, gid: 2000, groups: []uint32{7, 100}},
	{name: "none", uid: 2000, gid: 2000, groups: []uint32{7}},
	{name: "root", uid: 0, gid: 0},
}

// TestPermissionTable checks Tree.Permission against the kernel's
// generic_permission (refGenericPermission) over every permission mode
// (0000-0777), on an attribute and a directory, for every mask of read,
// write and exec and every kind of caller: the owner, a member of the
// node's group by its primary or a supplementary group, neither, root.
// Each case runs twice: with the caller's groups given, and with them
// unread (Cred.GroupsUnread, as a FUSE server sees a caller), through
// WithGroups, which must read them exactly when the kernel would look
// past the fsgid (in_group_p's groups_search), and never otherwise.
func TestPermissionTable(t *testing.T) {
	tr := newTestTree(t, "rwsem")
	nodes := []*Node{
		testkit.Must(tr.Add(tr.Root(), "f", NodeSpec{Kind: KindAttr, Mode: 0o644, Uid: 1000, Gid: 100, Source: NewValue("")}))(t),
		testkit.Must(tr.Add(tr.Root(), "d", NodeSpec{Kind: KindDir, Mode: 0o755, Uid: 1000, Gid: 100}))(t),
	}
	var diffs int
	for mode := uint32(0); mode < 0o1000; mode++ {
		for _, n := range nodes {
			require.NoError(t, tr.Setattr(n, SetattrArgs{Valid: SetMode, Mode: fs.FileMode(mode)}, RootCred))
			for mask := Access(1); mask <= 7; mask++ {
				for _, c := range permCallers {
					if msg := checkPermissionCase(tr, n, mode, mask, c); msg != "" {
						if diffs++; diffs <= 20 {
							t.Error(msg)
						}
					}
				}
			}
		}
	}
	if diffs > 0 {
		t.Errorf("%d cases differ from generic_permission", diffs)
	}
}

// checkPermissionCase is one case of TestPermissionTable: "" if it agrees
// with the kernel, else what differs.
func checkPermissionCase(tr *Tree, n *Node, mode uint32, mask Access, c refCaller) string {
	isDir := n.Kind() == KindDir
	want := refGenericPermission(mode, 1000, 100, isDir, uint32(mask), c)
	what := fmt.Sprintf("mode %04o, dir %v, mask %d, %s", mode, isDir, mask, c.name)
	full := Cred{Uid: c.uid, Gid: c.gid, Groups: c.groups}
	if got := tr.Permission(n, mask, full) == nil; got != want.granted {
		return fmt.Sprintf("%s, groups given: granted %v, want %v", what, got, want.granted)
	}
	reads := 0
	groups := func() ([]uint32, bool) { reads++; return c.groups, true }
	unread := Cred{Uid: c.uid, Gid: c.gid, GroupsUnread: true}
	err := WithGroups(unread, groups, func(c Cred) error { return tr.Permission(n, mask, c) })
	switch {
	case err != nil && Errno(err) != syscall.EACCES:
		return fmt.Sprintf("%s, groups unread: got %v, want EACCES or success", what, err)
	case (err == nil) != want.granted:
		return fmt.Sprintf("%s, groups unread: granted %v, want %v", what, err == nil, want.granted)
	case reads > 0 && !want.askedGroups:
		return fmt.Sprintf("%s, groups unread: read the groups where the kernel does not look at them", what)
	case reads == 0 && want.askedGroups && c.uid != 0:
		return fmt.Sprintf("%s, groups unread: decided without the groups the kernel looks at", what)
	}
	return ""
}

// TestWithGroupsFailsClosed checks that a check whose answer depends on
// groups that cannot be read is refused, both where the group class
// grants more than the other class and where it grants less.
func TestWithGroupsFailsClosed(t *testing.T) {
	tr := newTestTree(t, "rwsem")
	unread := Cred{Uid: 2000, Gid: 2000, GroupsUnread: true}
	noGroups := func() ([]uint32, bool) { return nil, false }
	for _, mode := range []fs.FileMode{0o640, 0o604} {
		f := testkit.Must(tr.Add(tr.Root(), fmt.Sprintf("f%o", mode), NodeSpec{Kind: KindAttr, Mode: mode, Gid: 100, Source: NewValue("")}))(t)
		err := WithGroups(unread, noGroups, func(c Cred) error { return tr.Permission(f, MayRead, c) })
		testkit.WantErrno(t, err, syscall.EACCES)
	}
}
