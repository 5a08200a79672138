package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// fsNode serves a kernfsim node through go-fuse's high-level fs package:
// the comparison server. The tree is copied into persistent inodes at
// mount, so lookups go through go-fuse's own inode table and locks, not
// through any kernfsim strategy.
type fsNode struct {
	gofs.Inode
	tr *kernfsim.Tree
	kn *kernfsim.Node
}

var (
	_ gofs.NodeGetattrer  = (*fsNode)(nil)
	_ gofs.NodeOpener     = (*fsNode)(nil)
	_ gofs.NodeReader     = (*fsNode)(nil)
	_ gofs.NodeReadlinker = (*fsNode)(nil)
	_ gofs.NodeOnAdder    = (*fsNode)(nil)
)

func (n *fsNode) OnAdd(ctx context.Context) {
	if n.kn.Kind() != kernfsim.KindDir {
		return
	}
	n.tr.Readdir(n.kn, 0, func(e kernfsim.Dirent) bool {
		c, err := n.tr.Lookup(n.kn, e.Name)
		if err == nil {
			child := &fsNode{tr: n.tr, kn: c}
			n.AddChild(e.Name, n.NewPersistentInode(ctx, child, gofs.StableAttr{Mode: typeBits(c.Kind()), Ino: c.Ino()}), false)
		}
		return true
	})
}

func (n *fsNode) Getattr(_ context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	st := n.tr.Getattr(n.kn)
	fillStat(&out.Attr, &st)
	return 0
}

func (n *fsNode) Open(context.Context, uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH, 0
}

func (n *fsNode) Read(ctx context.Context, _ gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var buf bytes.Buffer
	if err := n.kn.Source().Show(ctx, &buf); err != nil {
		return nil, syscall.EIO
	}
	b := buf.Bytes()
	if off >= int64(len(b)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(b[off:min(int64(len(b)), off+int64(len(dest)))]), 0
}

func (n *fsNode) Readlink(context.Context) ([]byte, syscall.Errno) { return []byte(n.kn.Target()), 0 }

// mountGoFuseFS mounts tr through go-fuse's fs package with zero timeouts,
// as kernfsim is mounted.
func mountGoFuseFS(b *testing.B, tr *kernfsim.Tree) string {
	testkit.RequireFUSE(b)
	mnt := b.TempDir()
	zero := time.Duration(0)
	srv, err := gofs.Mount(mnt, &fsNode{tr: tr, kn: tr.Root()}, &gofs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, DisableXAttrs: true, DisableReadDirPlus: true,
			MaxBackground: 64, Options: []string{"default_permissions"}},
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
	})
	require.NoError(b, err)
	b.Cleanup(func() { srv.Unmount() })
	// go-fuse's own prime runs with signals unblocked; a signal can lose
	// its POLL. Ours checks, as every kernfsim mount's does.
	require.NoError(b, uring.PrimeNoPoll(mnt))
	return mnt
}

// clientOps are the benchmark's client operations, as raw syscalls.
var clientOps = []struct {
	name string
	run  func(path string, buf []byte) error
}{
	{"stat", func(path string, _ []byte) error {
		var st unix.Stat_t
		return unix.Stat(path, &st)
	}},
	{"files", func(path string, buf []byte) error {
		fd, err := unix.Open(path, unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		_, err = unix.Read(fd, buf)
		unix.Close(fd)
		return err
	}},
}

// BenchmarkMount compares kernfsim's raw-API server under each lock with
// a server built on go-fuse's fs package serving the same tree, for stat
// and open/read/close of cpuN/topology/core_id. Client and server share
// one process; pin both to one CPU to take the idle-CPU wake-up out:
//
//	taskset -c 0 go test -run x -bench Mount -count 6 ./fusefs/ | benchstat -col /server -
func BenchmarkMount(b *testing.B) {
	testkit.RequireFUSE(b)
	var servers []struct{ name, lock string }
	for _, l := range locking.Names {
		servers = append(servers, struct{ name, lock string }{"kernfsim", l})
	}
	servers = append(servers, struct{ name, lock string }{"gofuse-fs", "none"})
	for _, s := range servers {
		tr, _ := newServedTree(b, s.lock)
		var mnt string
		if s.name == "kernfsim" {
			mnt = mountTest(b, tr, MountOptions{}).Mountpoint
		} else {
			mnt = mountGoFuseFS(b, tr)
		}
		path := filepath.Join(mnt, "devices/system/cpu/cpu1/topology/core_id")
		for _, op := range clientOps {
			b.Run(fmt.Sprintf("server=%s/lock=%s/op=%s", s.name, s.lock, op.name), func(b *testing.B) {
				buf := make([]byte, 32)
				for b.Loop() {
					if err := op.run(path, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestNoLeaksAfterUnmount(t *testing.T) {
	testkit.RequireFUSE(t)
	forEachTransport(t, testNoLeaksAfterUnmount)
}

func testNoLeaksAfterUnmount(t *testing.T, tp uring.Kind) {
	tr, _ := newServedTree(t, "rcu")
	cycle := func() {
		m, err := MountTree(tr, t.TempDir(), MountOptions{Transport: uring.Config{Only: tp}})
		require.NoError(t, err)
		for i := range 50 {
			os.ReadFile(filepath.Join(m.Mountpoint, fmt.Sprintf("devices/system/cpu/cpu%d/topology/core_id", i%4)))
		}
		require.NoError(t, m.Unmount())
	}
	// go-fuse keeps a process-wide pool of splice pipes, filled by the
	// first mount's reads: take the baseline after one cycle.
	cycle()
	goroutines, fds, threads := runtime.NumGoroutine(), openFDs(t), pinnedThreads(t)
	cycles := 3
	if tp == uring.URing {
		cycles = 20 // each starts and ends a thread, a ring and a mapping per CPU
	}
	for range cycles {
		cycle()
	}
	// Polled for exits, not synchronising; on this goroutine, which
	// require.EventuallyWithT's own would add to the count.
	testkit.WaitFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		leak := ""
		switch {
		case runtime.NumGoroutine() > goroutines:
			leak = fmt.Sprintf("%d goroutines (was %d)", runtime.NumGoroutine(), goroutines)
		case openFDs(t) > fds:
			leak = fmt.Sprintf("%d fds (was %d)", openFDs(t), fds)
		case pinnedThreads(t) > threads:
			leak = fmt.Sprintf("%d threads pinned to one CPU, as queue threads are (was %d)", pinnedThreads(t), threads)
		case ringMappings(t) > 0:
			leak = fmt.Sprintf("%d io_uring mappings", ringMappings(t))
		default:
			return nil
		}
		return fmt.Errorf("after %d mount/unmount cycles: %s", cycles, leak)
	})
}

// pinnedThreads is the number of the process's threads allowed on one
// CPU only, as the io_uring queue threads are. (The total would not do:
// the Go runtime keeps idle threads, and starts more while syscalls block
// on a loaded machine.) The main thread is left out: a queue goroutine
// that happened to lock it leaves it pinned and parked when it ends (the
// runtime never ends the main thread), one thread whatever the number of
// mounts. On a one-CPU machine every other thread counts.
func pinnedThreads(t *testing.T) int {
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	n := 0
	for _, task := range tasks {
		if task.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread ended
		}
		_, rest, _ := strings.Cut(string(b), "\nCpus_allowed_list:")
		cpus := strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0])
		if _, err := strconv.Atoi(cpus); err == nil {
			n++
		}
	}
	return n
}

// ringMappings counts the process's mappings of io_uring rings.
func ringMappings(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	return strings.Count(string(b), "io_uring")
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// BenchmarkServeOp is the server's side of one open/read/close of
// cpuN/topology/core_id with zero timeouts, called as a transport calls
// it, without FUSE: the six LOOKUPs of the walk, OPEN, READ and RELEASE.
// It is the tree's share of the per-op cost that scripts/measure/libfuse.sh
// compares with libfuse's reference server (which has no tree).
//
//	go test -run x -bench ServeOp -count 6 ./fusefs/ | benchstat -
func BenchmarkServeOp(b *testing.B) {
	for _, lock := range []string{"rcu", "rwsem"} {
		b.Run("lock="+lock, func(b *testing.B) {
			tr, _ := newServedTree(b, lock)
			s := New(tr, Options{})
			b.Cleanup(s.Close)
			path := []string{"devices", "system", "cpu", "cpu0", "topology", "core_id"}
			h := fuse.InHeader{Caller: fuse.Caller{Owner: fuse.Owner{Uid: 1000, Gid: 1000}, Pid: uint32(os.Getpid())}}
			var entry fuse.EntryOut
			var open fuse.OpenOut
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				h.NodeId = fuse.FUSE_ROOT_ID
				for _, name := range path {
					if st := s.Lookup(nil, &h, name, &entry); st != fuse.OK {
						b.Fatalf("LOOKUP %s: %v", name, st)
					}
					h.NodeId = entry.NodeId
				}
				if st := s.Open(nil, &fuse.OpenIn{InHeader: h, Flags: syscall.O_RDONLY}, &open); st != fuse.OK {
					b.Fatalf("OPEN: %v", st)
				}
				res, st := s.Read(nil, &fuse.ReadIn{InHeader: h, Fh: open.Fh, Size: uint32(len(buf))}, buf)
				if st != fuse.OK || res.Size() == 0 {
					b.Fatalf("READ: %v, %d bytes", st, res.Size())
				}
				res.Done() // as both transports do once they have sent it
				s.Release(nil, &fuse.ReleaseIn{InHeader: h, Fh: open.Fh})
			}
		})
	}
}
