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
				m := mount(t, fs, fuse.MountOptions{}, uring.Config{Only: kind, Depth: 2})
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
				t.Logf("leads taken %d, entries grown %d", taken, grown)
			})
		}
	}
}
