package main

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestChainMatchesTheReference mounts the chain over each transport and
// checks what the C reference server answers: the same contents, inode
// numbers and modes, and ENOENT off the chain.
func TestChainMatchesTheReference(t *testing.T) {
	testkit.RequireFUSE(t)
	kinds := []uring.Kind{uring.DevFuse}
	if fusetest.URing(t) {
		kinds = append(kinds, uring.URing)
	}
	for _, kind := range kinds {
		t.Run("transport="+string(kind), func(t *testing.T) {
			mnt := t.TempDir()
			opts := &fuse.MountOptions{DirectMount: true, DisableXAttrs: true, DisableReadDirPlus: true}
			fs := &flushCounter{chain: chain{fuse.NewDefaultRawFileSystem()}}
			srv, err := uring.NewServer(fs, mnt, opts, uring.Config{Only: kind})
			require.NoError(t, err)
			go srv.Serve()
			t.Cleanup(func() { assert.NoError(t, srv.Unmount()) })
			require.NoError(t, srv.WaitMount())

			topo := filepath.Join(mnt, "devices/system/cpu/cpu5/topology")
			b, err := os.ReadFile(filepath.Join(topo, "core_id"))
			require.NoError(t, err)
			assert.Equal(t, "2\n", string(b), "cpu5's core_id")
			var st syscall.Stat_t
			require.NoError(t, syscall.Stat(filepath.Join(topo, "die_id"), &st))
			assert.Equal(t, uint64(attr0+5*len(attrs)+1), st.Ino, "die_id's inode")
			assert.Equal(t, uint32(syscall.S_IFREG|0o444), st.Mode, "die_id's mode")
			require.NoError(t, syscall.Stat(topo, &st))
			assert.Equal(t, uint64(6+2*5), st.Ino, "topology's inode")
			// libfuse answers ENOSYS for the FLUSH its server leaves out,
			// and the kernel sends no more, so that an open/read/close is
			// nine requests on both servers. go-fuse's default answers OK,
			// and every close would cost a tenth.
			for range 3 {
				_, err := os.ReadFile(filepath.Join(topo, "core_id"))
				require.NoError(t, err)
			}
			assert.Equal(t, int32(1), fs.flushes.Load(), "FLUSH requests over four open/read/close")
			for _, missing := range []string{"devices/system/cpu/missing", "devices/system/cpu/cpu64", "devices/system/cpu/cpu05", "devices/system/cpu/cpu5/topology/nope"} {
				err := syscall.Stat(filepath.Join(mnt, missing), &st)
				assert.True(t, errors.Is(err, syscall.ENOENT), "stat %s: got %v, want ENOENT", missing, err)
			}
		})
	}
}

// flushCounter is the chain, counting the FLUSH requests it answers.
type flushCounter struct {
	chain
	flushes atomic.Int32
}

func (f *flushCounter) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	f.flushes.Add(1)
	return f.chain.Flush(cancel, in)
}
