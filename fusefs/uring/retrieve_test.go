package uring_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// cacheRoot has one file, "data", whose contents the test stores into
// and retrieves from the kernel's page cache.
type cacheRoot struct {
	gofs.Inode
	file *gofs.Inode
}

func (r *cacheRoot) OnAdd(ctx context.Context) {
	r.file = r.NewPersistentInode(ctx, &gofs.MemRegularFile{Data: []byte("hello world")}, gofs.StableAttr{})
	r.AddChild("data", r.file, false)
}

// TestCacheControl is go-fuse's fuse/test.TestCacheControl over both
// transports: what a server stores in the kernel's page cache
// (Inode.WriteCache, NOTIFY_STORE) is what it retrieves (Inode.ReadCache,
// NOTIFY_RETRIEVE answered by NOTIFY_REPLY, which over io_uring arrives
// on a queue), for a small chunk at an offset and for a big one that
// takes several retrieves of the capped size. On the old code the
// retrieve over io_uring never returned (or, asked MaxWrite bytes,
// crashed the kernel in fuse_copy_fill).
func TestCacheControl(t *testing.T) {
	for _, kind := range transports(t) {
		t.Run("transport="+string(kind), func(t *testing.T) {
			root := &cacheRoot{}
			sec := time.Duration(1 << 62)
			m := mount(t, gofs.NewNodeFS(root, &gofs.Options{EntryTimeout: &sec, AttrTimeout: &sec}), fuse.MountOptions{}, uring.Config{Only: kind})
			if _, err := os.Stat(filepath.Join(m.mnt, "data")); err != nil {
				t.Fatal(err)
			}
			retrieve := func(off int64, size int) []byte {
				t.Helper()
				buf := make([]byte, size)
				var n int
				var errno syscall.Errno
				within(t, m, "ReadCache", func() error { n, errno = root.file.ReadCache(off, buf); return nil })
				if errno != 0 {
					t.Fatalf("ReadCache(%d, %d): %v", off, size, errno)
				}
				return buf[:n]
			}
			store := func(off int64, data []byte) {
				t.Helper()
				var errno syscall.Errno
				within(t, m, "WriteCache", func() error { errno = root.file.WriteCache(off, data); return nil })
				if errno != 0 {
					t.Fatalf("WriteCache(%d, %d bytes): %v", off, len(data), errno)
				}
			}
			store(0, []byte("hello w123d"))
			if got, want := retrieve(1, 9), "ello w123"; string(got) != want {
				t.Errorf("small chunk: got %q, want %q", got, want)
			}
			big := bigChunk(1 << 20)
			store(0, big)
			if got := retrieve(0, len(big)+10000); !bytes.Equal(got, big) {
				t.Errorf("big chunk: got %d bytes, want %d (max write %d); first difference at %d", len(got), len(big), m.srv.MaxWrite(), firstDiff(got, big))
			}
		})
	}
}

// bigChunk is n bytes of distinct big-endian uint32s from 0x01020304, as
// go-fuse's test has, so that a shift by any number of bytes shows.
func bigChunk(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n/4; i++ {
		binary.BigEndian.PutUint32(b[4*i:], uint32(i)+0x01020304)
	}
	return b
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
