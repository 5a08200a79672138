package uring_test

import (
	"bytes"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// blockingWriteFS is go-fuse's (fuse/server_linux_test.go): one file,
// opened for direct I/O with parallel writes, whose WRITEs report that
// they entered and wait until released.
type blockingWriteFS struct {
	fuse.RawFileSystem
	entered     chan uint64
	release     chan struct{}
	releaseOnce sync.Once
}

func newBlockingWriteFS() *blockingWriteFS {
	return &blockingWriteFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), entered: make(chan uint64, 32), release: make(chan struct{})}
}

func (f *blockingWriteFS) unblock() { f.releaseOnce.Do(func() { close(f.release) }) }

func fileAttr(a *fuse.Attr) {
	*a = fuse.Attr{Ino: 2, Mode: fuse.S_IFREG | 0o644, Nlink: 1, Size: 1 << 20}
}

func (f *blockingWriteFS) Lookup(_ <-chan struct{}, _ *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if name != "file" {
		return fuse.ENOENT
	}
	out.NodeId = 2
	fileAttr(&out.Attr)
	return fuse.OK
}

func (f *blockingWriteFS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if in.NodeId == fuse.FUSE_ROOT_ID {
		out.Attr = fuse.Attr{Ino: 1, Mode: fuse.S_IFDIR | 0o755, Nlink: 2}
		return fuse.OK
	}
	fileAttr(&out.Attr)
	return fuse.OK
}

func (f *blockingWriteFS) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.NodeId != 2 {
		return fuse.ENOENT
	}
	out.OpenFlags = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES
	return fuse.OK
}

func (f *blockingWriteFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	select {
	case f.entered <- in.Unique:
	default:
	}
	select {
	case <-f.release:
	case <-cancel:
		return 0, fuse.EINTR
	}
	return uint32(len(data)), fuse.OK
}

// TestMaxInflightRequestBytes is go-fuse's
// fuse.TestMaxInflightRequestBytesLimitsLargeWritesAndKeepsReader over
// both transports: with MaxInflightRequestBytes at go-fuse's bytes for n
// requests, n of three blocked WRITEs are in the file system at once
// (one below a single request), and all three complete once released.
// On the old code the rings let all three in whatever the limit.
func TestMaxInflightRequestBytes(t *testing.T) {
	const writes, maxWrite = 3, 4096
	for _, kind := range transports(t) {
		t.Run("transport="+string(kind), func(t *testing.T) {
			per := 0
			for _, c := range []struct {
				name        string
				limit       func(per int) int
				wantEntered int
			}{
				{"below single request", func(int) int { return 1 }, 1},
				{"exactly single request", func(p int) int { return p }, 1},
				{"one byte below two requests", func(p int) int { return 2*p - 1 }, 1},
				{"exactly two requests", func(p int) int { return 2 * p }, 2},
				{"exactly all requests", func(p int) int { return writes * p }, writes},
				{"default unlimited", func(int) int { return 0 }, writes},
			} {
				t.Run(c.name, func(t *testing.T) {
					if per == 0 { // go-fuse's bytes per request, from a first mount
						m := mount(t, newBlockingWriteFS(), fuse.MountOptions{MaxWrite: maxWrite}, uring.Config{Only: kind})
						per = uring.RequestBytes(m.srv)
						m.unmount(t)
					}
					blockedWrites(t, kind, maxWrite, writes, c.limit(per), c.wantEntered)
				})
			}
		})
	}
}

// blockedWrites makes writes parallel WRITEs of maxWrite bytes with the
// given limit and checks that wantEntered enter the file system before
// they are released, and all after.
func blockedWrites(t *testing.T, kind uring.Kind, maxWrite, writes, limit, wantEntered int) {
	t.Helper()
	fs := newBlockingWriteFS()
	m := mount(t, fs, fuse.MountOptions{MaxWrite: maxWrite, MaxInflightRequestBytes: limit}, uring.Config{Only: kind, Depth: writes})
	var fds []int
	t.Cleanup(func() { // before the unmount; a close waits for the file's WRITEs
		fs.unblock()
		for _, fd := range fds {
			syscall.Close(fd)
		}
	})
	for range writes {
		fd, err := syscall.Open(filepath.Join(m.mnt, "file"), syscall.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	results := make(chan error, writes)
	for i, fd := range fds {
		go func() {
			_, err := syscall.Pwrite(fd, bytes.Repeat([]byte("x"), maxWrite), int64(i*maxWrite))
			results <- err
		}()
	}
	entered := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-fs.entered:
			case <-time.After(opWait):
				t.Fatalf("fewer than %d WRITEs entered within %v (limit %d)", n, opWait, limit)
			}
		}
	}
	entered(wantEntered)
	if wantEntered < writes {
		// A WRITE past the limit would enter now; none may.
		select {
		case u := <-fs.entered:
			t.Fatalf("WRITE %d entered with %d in the file system; limit %d bytes, want %d at once", u, wantEntered, limit, wantEntered)
		case <-time.After(50 * time.Millisecond):
		}
	}
	fs.unblock()
	entered(writes - wantEntered)
	for range writes {
		select {
		case err := <-results:
			if err != nil {
				t.Errorf("write: %v", err)
			}
		case <-time.After(opWait):
			t.Fatalf("a write did not complete within %v of the release", opWait)
		}
	}
}

// TestSingleThreaded: with MountOptions.SingleThreaded, a request waits
// while another is in the file system, on both transports (a WRITE the
// file system holds keeps a stat's LOOKUP out), and is served once that
// one returns.
func TestSingleThreaded(t *testing.T) {
	for _, kind := range transports(t) {
		t.Run("transport="+string(kind), func(t *testing.T) {
			fs := newBlockingWriteFS()
			m := mount(t, fs, fuse.MountOptions{SingleThreaded: true}, uring.Config{Only: kind})
			fd, err := syscall.Open(filepath.Join(m.mnt, "file"), syscall.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fs.unblock(); syscall.Close(fd) })
			wrote := make(chan error, 1)
			go func() { _, err := syscall.Pwrite(fd, []byte("x"), 0); wrote <- err }()
			select {
			case <-fs.entered:
			case <-time.After(opWait):
				t.Fatalf("the WRITE did not enter within %v", opWait)
			}
			stated := make(chan error, 1)
			go func() { var st syscall.Stat_t; stated <- syscall.Stat(filepath.Join(m.mnt, "file"), &st) }()
			select {
			case err := <-stated:
				t.Fatalf("stat returned (%v) while a WRITE was in the file system", err)
			case <-time.After(50 * time.Millisecond):
			}
			fs.unblock()
			for _, c := range []chan error{wrote, stated} {
				select {
				case err := <-c:
					if err != nil {
						t.Error(err)
					}
				case <-time.After(opWait):
					t.Fatalf("not served within %v of the release", opWait)
				}
			}
		})
	}
}
