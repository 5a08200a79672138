package uring_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// rendezvous is a directory whose every lookup waits until n lookups
// have arrived (go-fuse's TestNodeParallelLookup with n = 2): a handler
// that waits for other requests. A lookup still waiting after opWait
// gives up with ETIMEDOUT, which fails the test instead of hanging it.
type rendezvous struct {
	gofs.Inode
	n       int
	mu      sync.Mutex
	arrived int           // protected by mu
	all     chan struct{} // closed when arrived reaches n
}

var _ gofs.NodeLookuper = (*rendezvous)(nil)

func (r *rendezvous) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	r.mu.Lock()
	r.arrived++
	if r.arrived == r.n {
		close(r.all)
	}
	r.mu.Unlock()
	select {
	case <-r.all:
	case <-time.After(opWait):
		return nil, syscall.ETIMEDOUT
	}
	out.Mode = fuse.S_IFREG | 0o444
	return r.NewInode(ctx, &gofs.MemRegularFile{}, gofs.StableAttr{Mode: fuse.S_IFREG}), 0
}

// TestHandlerWaitsForAnother: n lookups from one CPU, each of whose
// handlers waits for all n, all return, on a queue of fewer entries than
// n. Inline serving alone hangs here (the second lookup waits in the ring
// behind the first handler); the watchdog's handoff and the queue's
// growth serve it.
func TestHandlerWaitsForAnother(t *testing.T) {
	for _, kind := range transports(t) {
		for _, n := range []int{2, 8} {
			t.Run(fmt.Sprintf("%s/n=%d", kind, n), func(t *testing.T) {
				root := &rendezvous{n: n, all: make(chan struct{})}
				zero := time.Duration(0)
				fs := gofs.NewNodeFS(root, &gofs.Options{EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero})
				m := mount(t, fs, fuse.MountOptions{Debug: true}, uring.Config{Only: kind, Depth: 2})
				defer func() {
					if t.Failed() {
						t.Log(m.log.String())
					}
				}()
				err := within(t, m, "lookups", func() error {
					errs := make(chan error, n)
					for i := range n {
						go func() {
							errs <- pinned(0, func() error {
								_, err := os.Lstat(filepath.Join(m.mnt, fmt.Sprint("f", i)))
								return err
							})
						}()
					}
					var all []error
					for range n {
						all = append(all, <-errs)
					}
					return errors.Join(all...)
				})
				if err != nil {
					t.Errorf("lookup: %v", err)
				}
				taken, grown := m.srv.Handoffs()
				if kind == uring.URing && taken == 0 {
					t.Errorf("served over io_uring with no lead taken: the lookups did not meet on one queue")
				}
				t.Logf("leads taken %d, entries grown %d, threads %d", taken, grown, m.srv.Threads())
				// The threads the takeovers added end once parked unneeded.
				testkit.WaitFor(t, opWait, 10*time.Millisecond, func() error {
					if n := m.srv.Threads(); n > m.srv.Rings() {
						return fmt.Errorf("%d threads serve %d rings a while after the lookups", n, m.srv.Rings())
					}
					return nil
				})
			})
		}
	}
}

// holders is a directory of files f0, f1, ... whose every SETATTR waits until
// a lookup of "go" arrives: writers that hold their ring entries (over
// io_uring a SETATTR is served off the queue thread, keeping its entry)
// until a reader from their CPU is served.
type holders struct {
	gofs.Inode
	n       int
	mu      sync.Mutex
	arrived int           // protected by mu
	all     chan struct{} // closed when n SETATTRs have arrived
	goAhead chan struct{} // closed by the lookup of "go"
	once    sync.Once
}

type holdFile struct {
	gofs.Inode
	h *holders
}

var (
	_ gofs.NodeLookuper  = (*holders)(nil)
	_ gofs.NodeSetattrer = (*holdFile)(nil)
)

func (h *holders) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	switch name {
	case "go":
		h.once.Do(func() { close(h.goAhead) })
		out.Mode = fuse.S_IFREG | 0o444
		return h.NewInode(ctx, &gofs.MemRegularFile{}, gofs.StableAttr{Mode: fuse.S_IFREG}), 0
	}
	var i uint64
	if _, err := fmt.Sscanf(name, "f%d", &i); err != nil {
		return nil, syscall.ENOENT
	}
	out.Mode = fuse.S_IFREG | 0o644
	return h.NewInode(ctx, &holdFile{h: h}, gofs.StableAttr{Mode: fuse.S_IFREG, Ino: 2 + i}), 0
}

func (f *holdFile) Setattr(ctx context.Context, _ gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	h := f.h
	h.mu.Lock()
	h.arrived++
	if h.arrived == h.n {
		close(h.all)
	}
	h.mu.Unlock()
	select {
	case <-h.goAhead:
	case <-time.After(opWait):
		return syscall.ETIMEDOUT
	}
	out.Mode = fuse.S_IFREG | in.Mode&0o7777
	return 0
}

// TestWritersLeaveEntries: more writers than a queue has entries wait,
// from one CPU, for a reader on that CPU, which must still be served.
// Without growth the writers hold every entry of the depth-2 queue and
// the reader waits in the kernel for one.
func TestWritersLeaveEntries(t *testing.T) {
	const n = 6
	for _, kind := range transports(t) {
		t.Run(string(kind), func(t *testing.T) {
			root := &holders{n: n, all: make(chan struct{}), goAhead: make(chan struct{})}
			zero := time.Duration(0)
			fs := gofs.NewNodeFS(root, &gofs.Options{EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero})
			m := mount(t, fs, fuse.MountOptions{}, uring.Config{Only: kind, Depth: 2})
			err := within(t, m, "chmods and a lookup", func() error {
				errs := make(chan error, n)
				for i := range n { // one file each: a chmod holds its inode's lock
					f := filepath.Join(m.mnt, fmt.Sprint("f", i))
					go func() { errs <- pinned(0, func() error { return os.Chmod(f, 0o600) }) }()
				}
				select {
				case <-root.all:
				case <-time.After(opWait):
					return fmt.Errorf("%d chmods did not all reach the server", n)
				}
				all := []error{pinned(0, func() error { _, err := os.Lstat(filepath.Join(m.mnt, "go")); return err })}
				for range n {
					all = append(all, <-errs)
				}
				return errors.Join(all...)
			})
			if err != nil {
				t.Error(err)
			}
			taken, grown := m.srv.Handoffs()
			if kind == uring.URing && grown < n-1 { // n-2 for the writers beyond depth 2, one for the lookup
				t.Errorf("served over io_uring with %d entries grown, want at least %d", grown, n-1)
			}
			t.Logf("leads taken %d, entries grown %d", taken, grown)
		})
	}
}

// TestFoldedOntoOneRing folds every possible CPU's queue onto one ring
// (Config.Rings) and serves requests from each CPU through it, a handler
// waiting for another request included. The kernel still sees every qid
// registered; fold_test.go does the same for 448 queues against a fake of
// the kernel's end.
func TestFoldedOntoOneRing(t *testing.T) {
	requireURing(t)
	cpus := testkit.Must(uring.PossibleCPUs())(t)
	if cpus < 2 {
		t.Skip("one possible CPU: nothing to fold")
	}
	root := &rendezvous{n: cpus, all: make(chan struct{})}
	zero := time.Duration(0)
	fs := gofs.NewNodeFS(root, &gofs.Options{EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero})
	m := mount(t, fs, fuse.MountOptions{}, uring.Config{Only: uring.URing, Rings: 1})
	if m.srv.Rings() != 1 || m.srv.Queues() != cpus || len(m.srv.Served()) != 1 {
		t.Fatalf("%d rings for %d queues (%d counts), want 1 for %d", m.srv.Rings(), m.srv.Queues(), len(m.srv.Served()), cpus)
	}
	before := m.srv.Served()[0]
	err := within(t, m, "a lookup from each CPU", func() error {
		errs := make(chan error, cpus)
		for cpu := range cpus {
			go func() {
				errs <- pinned(cpu, func() error {
					_, err := os.Lstat(filepath.Join(m.mnt, fmt.Sprint("f", cpu)))
					return err
				})
			}()
		}
		var all []error
		for range cpus {
			all = append(all, <-errs)
		}
		return errors.Join(all...)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.srv.Served()[0] - before; got < uint64(cpus) {
		t.Errorf("the one ring served %d requests, want at least the %d lookups", got, cpus)
	}
}

// waitsForCancel is a root whose OPENDIR waits until its request is
// cancelled (go-fuse's fs.TestAbort).
type waitsForCancel struct {
	gofs.Inode
	called    chan struct{}
	cancelled chan struct{}
}

var _ gofs.NodeOpendirHandler = (*waitsForCancel)(nil)

func (n *waitsForCancel) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	close(n.called)
	select {
	case <-ctx.Done():
		close(n.cancelled)
		return nil, 0, syscall.EINTR
	case <-time.After(opWait):
		return nil, 0, syscall.ETIMEDOUT
	}
}

// TestAbortCancelsHandlers: when the connection is aborted, a handler
// waiting for its request's cancellation is cancelled, the client gets an
// error, and Serve returns: over io_uring the kernel no longer answers for
// an entry a handler holds, so the queues must not wait for it. Before,
// go-fuse's TestAbort hung over the rings about once in twenty runs.
func TestAbortCancelsHandlers(t *testing.T) {
	for _, kind := range transports(t) {
		t.Run(string(kind), func(t *testing.T) {
			root := &waitsForCancel{called: make(chan struct{}), cancelled: make(chan struct{})}
			m := mount(t, gofs.NewNodeFS(root, &gofs.Options{}), fuse.MountOptions{}, uring.Config{Only: kind})
			opened := make(chan error, 1)
			go func() {
				fd, err := syscall.Open(m.mnt, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
				if err == nil {
					syscall.Close(fd)
				}
				opened <- err
			}()
			select {
			case <-root.called:
			case <-time.After(opWait):
				t.Fatal("OPENDIR never reached the handler")
			}
			if err := uring.Abort(m.srv); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-opened:
				if err == nil {
					t.Error("opendir succeeded on an aborted connection")
				}
			case <-time.After(opWait):
				t.Fatal("opendir did not return after the abort")
			}
			select {
			case <-root.cancelled:
			case <-time.After(opWait):
				t.Fatal("the handler's request was not cancelled when the connection ended")
			}
			select {
			case <-m.served:
			case <-time.After(opWait):
				t.Fatal("Serve did not return after the abort")
			}
		})
	}
}
