package kernfsim

import (
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestRefWalkBalancesReferences walks every kind of path with RefWalk on,
// from several goroutines, and checks that every reference taken was
// dropped (each dentry's count, the mount's and the root's back at zero)
// and that each directory passed had its inode refreshed from its node.
func TestRefWalkBalancesReferences(t *testing.T) {
	user := Cred{Uid: 1000, Gid: 1000}
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr, loop := newLoopTree(t, lock)
		testkit.Must(tr.Symlink(loop, "abs", "/devices/virtual/net/lo"))(t)
		w := NewWalker(tr, WalkerOptions{RefWalk: true, MountDepth: 1})
		paths := []struct {
			path string
			want syscall.Errno
		}{
			{"class/net/lo/mtu", 0},
			{"/devices/virtual/net/lo/../lo/./operstate", 0},
			{"loop/abs/mtu", 0},
			{"class/net/eth0/mtu", syscall.ENOENT},
			{"class/net/eth0", syscall.ENOENT}, // twice: the second finds the negative dentry
			{"class/net/eth0", syscall.ENOENT},
			{"class/net/lo/mtu/x", syscall.ENOTDIR},
			{"secret/key", syscall.EACCES},
			{"loop/a", syscall.ELOOP},
		}
		// One goroutine first, so that every dentry a walk reaches is cached
		// once (two goroutines that miss at once each cache one, and the
		// loser's children stay cached under a parent no walk reaches).
		var wg sync.WaitGroup
		for g := range 4 {
			if g == 1 {
				wg.Wait()
			}
			wg.Go(func() {
				buf := make([]byte, 32)
				for range 50 {
					for _, p := range paths {
						if _, e := w.ResolveErrno(user, p.path); e != p.want {
							t.Errorf("ResolveErrno(%q): got errno %v, want %v", p.path, e, p.want)
						}
					}
					if _, e := w.ReadFileErrno(user, "class/net/lo/mtu", buf); e != 0 {
						t.Errorf("ReadFileErrno: %v", e)
					}
				}
			})
		}
		wg.Wait()

		if n := w.root.lines.refs.Load(); n != 0 {
			t.Errorf("root dentry holds %d references after every walk ended", n)
		}
		for i := range w.ref.mount {
			if n := w.ref.mount[i].refs.Load(); n != 0 {
				t.Errorf("mount dentry %d holds %d references after every walk ended", i, n)
			}
		}
		dentries, refreshed := 0, 0
		for i := range w.cache.buckets {
			for d := w.cache.buckets[i].head.Load(); d != nil; d = d.next.Load() {
				dentries++
				if n := d.lines.refs.Load(); n != 0 {
					t.Errorf("dentry %q holds %d references after every walk ended", d.name, n)
				}
				if d.node != nil && d.lines.mode.Load() != 0 {
					refreshed++
					if got, want := d.lines.mode.Load(), uint32(d.node.attr.Load().Mode); got != want {
						t.Errorf("dentry %q: inode refreshed to mode %o, node has %o", d.name, got, want)
					}
				}
				if d.name == "mtu" && d.lines.mode.Load() == 0 {
					t.Errorf("the file read (mtu) never had its inode refreshed: may_open's permission check is not modelled")
				}
			}
		}
		if dentries == 0 || refreshed == 0 {
			t.Errorf("%d dentries cached, %d inodes refreshed: the walks made no ref-walk writes", dentries, refreshed)
		}
	})
}

// TestLayoutKeepsLines checks the sizes that keep the walker's lines as
// the kernel keeps them: a dentry is one line's worth, and a File and its
// show() buffer take whole lines, so two CPUs' files share none.
func TestLayoutKeepsLines(t *testing.T) {
	if got := unsafe.Sizeof(dentry{}); got != 64 {
		t.Errorf("a dentry is %d bytes, want 64: the fields a lookup reads would straddle two lines", got)
	}
	if got := unsafe.Sizeof(File{}); got%cacheLine != 0 {
		t.Errorf("a File is %d bytes, want a multiple of %d", got, cacheLine)
	}
	f := filePool.Get().(*File)
	defer filePool.Put(f)
	if c := f.buf.Cap(); c%cacheLine != 0 {
		t.Errorf("a pooled File's show() buffer holds %d bytes, want a multiple of %d", c, cacheLine)
	}
}

// TestRefWalkOffWritesNothing checks that the bare walker allocates no
// ref-walk lines, so it takes no references and refreshes no inode.
func TestRefWalkOffWritesNothing(t *testing.T) {
	tr := newNetTree(t, "rwsem")
	w := NewWalker(tr, WalkerOptions{MountDepth: 1})
	testkit.Must(w.Resolve(RootCred, "class/net/lo/mtu"))(t)
	if w.ref.on || len(w.ref.mount) != 0 || w.root.lines != nil {
		t.Errorf("RefWalk off: got ref-walk state %+v, root lines %v", w.ref, w.root.lines)
	}
	for i := range w.cache.buckets {
		for d := w.cache.buckets[i].head.Load(); d != nil; d = d.next.Load() {
			if d.lines != nil {
				t.Errorf("RefWalk off: dentry %q has ref-walk lines", d.name)
			}
		}
	}
}
