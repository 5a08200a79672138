package kernfsim

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestSetattrKeepsSpecialBits checks that chmod keeps the setuid, setgid
// and sticky bits, as kernfs stores the whole mode (__kernfs_setattr),
// except the setgid bit set by an owner outside the group
// (setattr_prepare), and that the io/fs view shows them.
func TestSetattrKeepsSpecialBits(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		f := testkit.Must(tr.Add(tr.Root(), "f", NodeSpec{Kind: KindAttr, Mode: 0o644, Uid: 1000, Gid: 100, Source: NewValue("")}))(t)
		d := testkit.Must(tr.Add(tr.Root(), "d", NodeSpec{Kind: KindDir, Mode: 0o755}))(t)
		owner := Cred{Uid: 1000, Gid: 1000}
		member := Cred{Uid: 1000, Gid: 1000, Groups: []uint32{100}}
		for _, c := range []struct {
			name string
			n    *Node
			mode fs.FileMode
			c    Cred
			want fs.FileMode
		}{
			{"root sets all", f, ModeSpecial | 0o755, RootCred, ModeSpecial | 0o755},
			{"root sets sticky on a dir", d, fs.ModeSticky | 0o777, RootCred, fs.ModeSticky | 0o777},
			{"owner sets setuid", f, fs.ModeSetuid | 0o755, owner, fs.ModeSetuid | 0o755},
			{"owner outside the group loses setgid", f, fs.ModeSetgid | fs.ModeSticky | 0o750, owner, fs.ModeSticky | 0o750},
			{"owner in the group by a supplementary one keeps setgid", f, fs.ModeSetgid | 0o750, member, fs.ModeSetgid | 0o750},
			{"plain chmod clears them", f, 0o640, RootCred, 0o640},
		} {
			require.NoError(t, tr.Setattr(c.n, SetattrArgs{Valid: SetMode, Mode: c.mode}, c.c))
			if got := tr.Getattr(c.n).Mode; got != c.want {
				t.Errorf("%s: chmod %v: got mode %v, want %v", c.name, c.mode, got, c.want)
			}
		}
		require.NoError(t, tr.Setattr(f, SetattrArgs{Valid: SetMode, Mode: fs.ModeSetuid | 0o755}, RootCred))
		if fi := testkit.Must(fs.Stat(tr.FS(RootCred), "f"))(t); fi.Mode() != fs.ModeSetuid|0o755 {
			t.Errorf("io/fs view after chmod u+s: got %v, want %v", fi.Mode(), fs.ModeSetuid|0o755)
		}
		testkit.WantErrno(t, tr.Setattr(f, SetattrArgs{Valid: SetMode, Mode: fs.ModeDir | 0o755}, RootCred), syscall.EINVAL)
	})
}

// TestSetattrNeedsGroups checks when a chmod depends on groups that the
// caller did not give (Cred.GroupsUnread): Setattr then answers
// ErrGroupsNeeded and changes nothing.
func TestSetattrNeedsGroups(t *testing.T) {
	tr := newTestTree(t, "rwsem")
	f := testkit.Must(tr.Add(tr.Root(), "f", NodeSpec{Kind: KindAttr, Mode: 0o644, Uid: 1000, Gid: 100, Source: NewValue("")}))(t)
	sgid := SetattrArgs{Valid: SetMode, Mode: fs.ModeSetgid | 0o644}
	for _, c := range []struct {
		name string
		args SetattrArgs
		c    Cred
		want bool
	}{
		{"setgid by the owner outside the group", sgid, Cred{Uid: 1000, Gid: 1000}, true},
		{"setgid by the owner whose gid is the group", sgid, Cred{Uid: 1000, Gid: 100}, false},
		{"setgid by root", sgid, RootCred, false},
		{"setgid with a chgrp to the caller's gid", SetattrArgs{Valid: SetMode | SetGid, Mode: fs.ModeSetgid, Gid: 1000}, Cred{Uid: 1000, Gid: 1000}, false},
		{"plain chmod", SetattrArgs{Valid: SetMode, Mode: 0o600}, Cred{Uid: 1000, Gid: 1000}, false},
	} {
		require.NoError(t, tr.Setattr(f, SetattrArgs{Valid: SetMode | SetGid, Mode: 0o644, Gid: 100}, RootCred))
		c.c.GroupsUnread = true
		err := tr.Setattr(f, c.args, c.c)
		if got := errors.Is(err, ErrGroupsNeeded); got != c.want {
			t.Errorf("%s: got %v, want ErrGroupsNeeded %v", c.name, err, c.want)
		}
		if c.want && tr.Getattr(f).Mode != 0o644 {
			t.Errorf("%s: a chmod that needed groups changed the mode to %v", c.name, tr.Getattr(f).Mode)
		}
	}
}

// TestSupplementaryGroups checks that a supplementary group grants its
// class of the mode, refuses past it (a 0604 file), and that a caller
// whose groups are unread is told ErrGroupsNeeded where they decide.
func TestSupplementaryGroups(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := testkit.Must(tr.Add(tr.Root(), "d", NodeSpec{Kind: KindDir, Mode: 0o750, Gid: 100}))(t)
		f := testkit.Must(tr.Add(d, "f", NodeSpec{Kind: KindAttr, Mode: 0o640, Gid: 100, Source: Static("x\n")}))(t)
		wo := testkit.Must(tr.Add(d, "wo", NodeSpec{Kind: KindAttr, Mode: 0o604, Gid: 100, Source: Static("x\n")}))(t)
		own := testkit.Must(tr.Add(d, "own", NodeSpec{Kind: KindAttr, Mode: 0o040, Uid: 7, Gid: 100, Source: Static("x\n")}))(t)
		nobody := Cred{Uid: 65534, Gid: 65534}
		member := Cred{Uid: 65534, Gid: 65534, Groups: []uint32{100}}
		testkit.WantErrno(t, tr.Permission(d, MayExec, nobody), syscall.EACCES)
		require.NoError(t, tr.Permission(d, MayExec, member))
		_, err := tr.Open(f, os.O_RDONLY, nobody)
		testkit.WantErrno(t, err, syscall.EACCES)
		testkit.Must(tr.Open(f, os.O_RDONLY, member))(t).Release()
		if _, err := NewWalker(tr, WalkerOptions{}).ReadFile(member, "d/f", make([]byte, 8)); err != nil {
			t.Errorf("walker: read d/f as a member of group 100: %v", err)
		}
		unread := Cred{Uid: 65534, Gid: 65534, GroupsUnread: true}
		testkit.WantErrno(t, tr.Permission(d, MayExec, unread), ErrGroupsNeeded)
		testkit.WantErrno(t, tr.Permission(wo, MayRead, unread), ErrGroupsNeeded)
		testkit.WantErrno(t, tr.Permission(wo, MayRead, member), syscall.EACCES)
		require.NoError(t, tr.Permission(own, MayRead, Cred{Uid: 65534, Gid: 100, GroupsUnread: true}))
		_, err = tr.Open(f, os.O_RDONLY, unread)
		testkit.WantErrno(t, err, ErrGroupsNeeded)
	})
}

// TestMayCreateDelete checks the VFS's may_create, may_delete and
// may_linkat, which the namespace operations pass before sysfs refuses.
func TestMayCreateDelete(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		d := testkit.Must(tr.Mkdir(tr.Root(), "d", 0o755))(t)
		f := testkit.Must(tr.AddAttr(d, "f", 0o444, Static("x\n")))(t)
		rw := testkit.Must(tr.AddAttr(d, "rw", 0o666, NewValue("")))(t)
		sticky := testkit.Must(tr.Add(tr.Root(), "tmp", NodeSpec{Kind: KindDir, Mode: 0o777}))(t)
		require.NoError(t, tr.Setattr(sticky, SetattrArgs{Valid: SetMode, Mode: fs.ModeSticky | 0o777}, RootCred))
		testkit.Must(tr.Add(sticky, "theirs", NodeSpec{Kind: KindAttr, Mode: 0o444, Uid: 5, Source: Static("")}))(t)
		testkit.Must(tr.Add(sticky, "mine", NodeSpec{Kind: KindAttr, Mode: 0o444, Uid: 1000, Source: Static("")}))(t)
		user := Cred{Uid: 1000, Gid: 1000}
		for _, c := range []struct {
			name string
			err  error
			want syscall.Errno
		}{
			{"create a new name as root", tr.MayCreate(d, "new", RootCred), 0},
			{"create an existing name", tr.MayCreate(d, "f", RootCred), syscall.EEXIST},
			{"create in a 0755 dir as a user", tr.MayCreate(d, "new", user), syscall.EACCES},
			{"create in a file", tr.MayCreate(f, "new", RootCred), syscall.ENOTDIR},
			{"delete as root", tr.MayDelete(d, "f", RootCred), 0},
			{"delete a missing name", tr.MayDelete(d, "missing", RootCred), syscall.ENOENT},
			{"delete in a 0755 dir as a user", tr.MayDelete(d, "f", user), syscall.EACCES},
			{"delete another's file in a sticky dir", tr.MayDelete(sticky, "theirs", user), syscall.EPERM},
			{"delete one's own file in a sticky dir", tr.MayDelete(sticky, "mine", user), 0},
			{"link root's 0444 file as a user", tr.MayLink(f, user), syscall.EPERM},
			{"link a 0666 file as a user", tr.MayLink(rw, user), 0},
			{"link a dir as root", tr.MayLink(d, RootCred), 0},
			{"link a dir as a user", tr.MayLink(d, user), syscall.EPERM},
		} {
			if got := Errno(c.err); c.err == nil && c.want != 0 || c.err != nil && got != c.want {
				t.Errorf("%s: got %v, want %v", c.name, c.err, ErrnoName(c.want))
			}
		}
		require.NoError(t, tr.Remove(t.Context(), d))
		testkit.WantErrno(t, tr.MayCreate(d, "new", RootCred), syscall.ENOENT)
	})
}
