package fusefs

import (
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// TestHandleTableReusesSlots checks handleTable's claims: a released
// slot is reused under a new handle, the old handle then resolves to
// nothing (also for a READ that found the slot before the RELEASE), and
// OPEN, READ's lookup and RELEASE allocate nothing once the slots exist
// (the table used to allocate a handle per OPEN).
func TestHandleTableReusesSlots(t *testing.T) {
	tr, _ := newServedTree(t, "rcu")
	f, err := tr.Open(tr.Root(), os.O_RDONLY, kernfsim.RootCred)
	require.NoError(t, err)
	defer f.Release()
	var ht handleTable

	fh1 := ht.add(f)
	require.NotNil(t, ht.get(fh1))
	stale := ht.get(fh1)
	require.Same(t, f, ht.remove(fh1))
	require.Nil(t, ht.get(fh1), "a released handle must resolve to nothing")
	require.Nil(t, ht.remove(fh1), "a second RELEASE must find nothing")
	_, err = stale.read(fh1, nil, make([]byte, 8), 0)
	require.ErrorIs(t, err, syscall.EBADF, "a READ that found the slot before its RELEASE")

	fh2 := ht.add(f)
	require.Equal(t, uint32(fh1), uint32(fh2), "the released slot is reused")
	require.NotEqual(t, fh1, fh2, "under a new generation")
	require.Nil(t, ht.get(fh1), "the old handle must not reach the new open")
	_, err = stale.read(fh1, nil, make([]byte, 8), 0)
	require.ErrorIs(t, err, syscall.EBADF, "a stale READ must not reach the new open's file")
	require.Same(t, f, ht.remove(fh2))

	fhs := make([]uint64, 3*(1<<handleSlabBits))
	for i := range fhs {
		fhs[i] = ht.add(f)
	}
	for _, fh := range fhs {
		require.Same(t, f, ht.remove(fh))
	}
	require.Zero(t, ht.count.Load())
	allocs := testing.AllocsPerRun(100, func() {
		fh := ht.add(f)
		if ht.get(fh) == nil || ht.remove(fh) != f {
			t.Fatal("handle lost")
		}
	})
	require.Zero(t, allocs, "allocations per add, get and remove")
	require.LessOrEqual(t, ht.next.Load(), uint32(len(fhs)+1), "slots used beyond the peak of open files")
}

// TestFillStat checks fillStat's reply against the conversion it
// replaced: go-fuse's SetTimes with atime = mtime, the type bits, and
// the setuid, setgid and sticky bits.
func TestFillStat(t *testing.T) {
	mtime := time.Unix(1700000000, 123456789)
	ctime := time.Now()
	for _, st := range []kernfsim.Stat{
		{Attr: kernfsim.Attr{Mode: 0o755, Mtime: mtime, Ctime: ctime}, Ino: 1, Kind: kernfsim.KindDir, Nlink: 5},
		{Attr: kernfsim.Attr{Mode: 0o444, Uid: 7, Gid: 8, Mtime: mtime, Ctime: mtime}, Ino: 2, Kind: kernfsim.KindAttr, Size: 4096, Nlink: 1},
		{Attr: kernfsim.Attr{Mode: 0o644 | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky, Mtime: ctime, Ctime: ctime}, Ino: 3, Kind: kernfsim.KindAttr, Nlink: 1},
		{Attr: kernfsim.Attr{Mode: 0o777, Mtime: mtime, Ctime: ctime}, Ino: 4, Kind: kernfsim.KindSymlink, Size: 9, Nlink: 1},
	} {
		want := fuse.Attr{Ino: st.Ino, Size: uint64(st.Size), Nlink: st.Nlink, Mode: typeBits(st.Kind) | uint32(st.Mode.Perm()),
			Owner: fuse.Owner{Uid: st.Uid, Gid: st.Gid}, Blksize: kernfsim.PageSize}
		if st.Mode&fs.ModeSetuid != 0 {
			want.Mode |= syscall.S_ISUID | syscall.S_ISGID | syscall.S_ISVTX
		}
		want.SetTimes(&st.Mtime, &st.Mtime, &st.Ctime)
		var got fuse.Attr
		fillStat(&got, &st)
		require.Equal(t, want, got, "ino %d", st.Ino)
	}
}

// BenchmarkServeGetattr is GETATTR of cpu0/topology/core_id as a
// transport calls it, without FUSE: what a path walk under
// default_permissions (--permissions kernel) adds per directory, which
// BenchmarkServeOp's chain does not send.
func BenchmarkServeGetattr(b *testing.B) {
	for _, lock := range []string{"rcu", "rwsem"} {
		b.Run("lock="+lock, func(b *testing.B) {
			tr, _ := newServedTree(b, lock)
			s := New(tr, Options{})
			b.Cleanup(s.Close)
			h := fuse.InHeader{NodeId: fuse.FUSE_ROOT_ID}
			var entry fuse.EntryOut
			for _, name := range []string{"devices", "system", "cpu", "cpu0", "topology", "core_id"} {
				if st := s.Lookup(nil, &h, name, &entry); st != fuse.OK {
					b.Fatalf("LOOKUP %s: %v", name, st)
				}
				h.NodeId = entry.NodeId
			}
			in := fuse.GetAttrIn{InHeader: h}
			var out fuse.AttrOut
			b.ReportAllocs()
			for b.Loop() {
				if st := s.GetAttr(nil, &in, &out); st != fuse.OK {
					b.Fatalf("GETATTR: %v", st)
				}
			}
		})
	}
}
