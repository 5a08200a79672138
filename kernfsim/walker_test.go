package kernfsim

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// newNetTree builds a small sysfs-like fixture: a netdev with a class/net
// symlink, a root-only directory and a dynamic attribute.
func newNetTree(t *testing.T, lock string) *Tree {
	tr := newTestTree(t, lock)
	lo := mkpath(t, tr, "devices", "virtual", "net", "lo")
	testkit.Must(tr.AddAttr(lo, "mtu", 0o644, NewValue("65536\n")))(t)
	testkit.Must(tr.AddAttr(lo, "operstate", 0o444, Static("unknown\n")))(t)
	net := mkpath(t, tr, "class", "net")
	testkit.Must(tr.Symlink(net, "lo", "../../devices/virtual/net/lo"))(t)
	secret := testkit.Must(tr.Mkdir(tr.Root(), "secret", 0o700))(t)
	testkit.Must(tr.AddAttr(secret, "key", 0o444, Static("k\n")))(t)
	n := 0
	testkit.Must(tr.AddAttr(tr.Root(), "counter", 0o444, NewFunc(func() string { n++; return strconv.Itoa(n) + "\n" })))(t)
	return tr
}

// newLoopTree is newNetTree with loop/a and loop/b, symlinks to each
// other (ELOOP), and returns it with the loop directory.
func newLoopTree(t *testing.T, lock string) (*Tree, *Node) {
	tr := newNetTree(t, lock)
	loop := mkpath(t, tr, "loop")
	testkit.Must(tr.Symlink(loop, "a", "b"))(t)
	testkit.Must(tr.Symlink(loop, "b", "a"))(t)
	return tr, loop
}

func TestWalkerResolve(t *testing.T) {
	user := Cred{Uid: 1000, Gid: 1000}
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr, _ := newLoopTree(t, lock)
		w := NewWalker(tr, WalkerOptions{})
		for _, c := range []struct {
			path string
			cred Cred
			want syscall.Errno
		}{
			{"class/net/lo/mtu", user, 0},
			{"/devices/virtual/net/lo/../lo/./operstate", user, 0},
			{"class/net/lo", user, 0},
			{"class/net/eth0/mtu", user, syscall.ENOENT},
			{"class/net/lo/mtu/x", user, syscall.ENOTDIR},
			{"secret/key", user, syscall.EACCES},
			{"secret/key", RootCred, 0},
			{"loop/a", user, syscall.ELOOP},
		} {
			_, err := w.Resolve(c.cred, c.path)
			var pe *fs.PathError
			switch {
			case c.want == 0 && err != nil:
				t.Errorf("Resolve(%q): got %v, want success", c.path, err)
			case c.want != 0 && (!errors.As(err, &pe) || pe.Path != c.path || !errors.Is(err, c.want)):
				t.Errorf("Resolve(%q): got %v, want *fs.PathError for that path with %v", c.path, err, c.want)
			}
			if _, e := w.ResolveErrno(c.cred, c.path); e != c.want {
				t.Errorf("ResolveErrno(%q): got errno %v, want %v", c.path, e, c.want)
			}
		}
		if n := testkit.Must(w.Lresolve(user, "class/net/lo"))(t); n.Kind() != KindSymlink {
			t.Errorf("Lresolve of a symlink: got %v, want the symlink", n.Kind())
		}
		buf := make([]byte, 32)
		if k := testkit.Must(w.ReadFile(user, "class/net/lo/mtu", buf))(t); string(buf[:k]) != "65536\n" {
			t.Errorf("ReadFile: got %q, want %q", buf[:k], "65536\n")
		}
	})
}

// The errno forms fail as the error forms do and read the same bytes.
func TestWalkerErrnoForms(t *testing.T) {
	user := Cred{Uid: 1000, Gid: 1000}
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		w := NewWalker(newNetTree(t, lock), WalkerOptions{})
		buf := make([]byte, 32)
		for _, c := range []struct {
			path string
			want syscall.Errno
		}{
			{"class/net/lo/mtu", 0},
			{"class/net/eth0/mtu", syscall.ENOENT},
			{"secret/key", syscall.EACCES},
			{"class/net", syscall.EISDIR},
		} {
			k, e := w.ReadFileErrno(user, c.path, buf)
			_, err := w.ReadFile(user, c.path, buf[:0])
			switch {
			case e != c.want:
				t.Errorf("ReadFileErrno(%q): got errno %v, want %v", c.path, e, c.want)
			case c.want != 0 && !errors.Is(err, c.want):
				t.Errorf("ReadFile(%q): got %v, want %v like ReadFileErrno", c.path, err, c.want)
			case c.want == 0 && string(buf[:k]) != "65536\n":
				t.Errorf("ReadFileErrno(%q): read %q, want %q", c.path, buf[:k], "65536\n")
			}
			if _, e := w.StatErrno(user, c.path); c.want != syscall.EISDIR && e != c.want {
				t.Errorf("StatErrno(%q): got errno %v, want %v", c.path, e, c.want)
			}
		}
	})
}

func TestWalkerNegativeCachePerEra(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		want := int64(0)
		if tr.Strategy().Traits().CachesNegatives {
			want = 1
		}
		cpu := mkpath(t, tr, "devices", "system", "cpu")
		w := NewWalker(tr, WalkerOptions{})
		testkit.Must(w.Resolve(RootCred, "devices/system/cpu"))(t)
		before := w.CachedDentries()
		for range 3 {
			_, err := w.Resolve(RootCred, "devices/system/cpu/does_not_exist")
			testkit.WantErrno(t, err, syscall.ENOENT)
		}
		if got := w.CachedDentries() - before; got != want {
			t.Fatalf("negative dentries cached: got %d, want %d", got, want)
		}
		// A cached negative never survives creation of the name.
		n := testkit.Must(tr.Mkdir(cpu, "does_not_exist", 0o755))(t)
		if got := testkit.Must(w.Resolve(RootCred, "devices/system/cpu/does_not_exist"))(t); got != n {
			t.Fatal("resolve after creation did not find the new node")
		}
		// A cached positive never survives removal or rename.
		require.NoError(t, tr.Rename(n, cpu, "renamed"))
		_, err := w.Resolve(RootCred, "devices/system/cpu/does_not_exist")
		testkit.WantErrno(t, err, syscall.ENOENT)
		require.NoError(t, tr.Remove(context.Background(), n))
		_, err = w.Resolve(RootCred, "devices/system/cpu/renamed")
		testkit.WantErrno(t, err, syscall.ENOENT)
	})
}

func TestWalkerNoAllocs(t *testing.T) {
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr := newNetTree(t, lock)
		tr.Seal()
		w := NewWalker(tr, WalkerOptions{})
		user := Cred{Uid: 1000, Gid: 1000}
		testkit.Must(w.Resolve(user, "class/net/lo/mtu"))(t)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := w.Resolve(user, "class/net/lo/mtu"); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("Resolve of a cached existing path: got %v allocations, want 0", allocs)
		}
		buf := make([]byte, 32)
		allocs = testing.AllocsPerRun(100, func() {
			_, e1 := w.ResolveErrno(user, "class/net/eth0/mtu")
			_, e2 := w.ReadFileErrno(user, "class/net/eth0/mtu", buf)
			if _, e3 := w.ReadFileErrno(user, "class/net/lo/mtu", buf); e1 != syscall.ENOENT || e2 != syscall.ENOENT || e3 != 0 {
				t.Fatalf("got errnos %v, %v, %v, want ENOENT, ENOENT, 0", e1, e2, e3)
			}
		})
		if allocs != 0 && !raceBuild { // the race detector's sync.Pool drops files put back
			t.Fatalf("errno walks of a missing and an existing path: got %v allocations, want 0", allocs)
		}
	})
}

func TestFSConformance(t *testing.T) {
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr := newNetTree(t, lock)
		tr.Seal()
		tr.Freeze(true)
		defer tr.Freeze(false)
		err := fstest.TestFS(tr.FS(RootCred), "devices/virtual/net/lo/mtu", "class/net/lo", "counter", "secret/key")
		require.NoError(t, err)
	})
}
