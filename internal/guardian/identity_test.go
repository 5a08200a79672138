package guardian

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/fusectl"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
)

// TestHeldAbortFileSparesALaterConnection checks the guardian's identity
// of its connection: an abort file opened while connection A serves is
// live while A is, not live once A is unmounted, even when a later mount
// B at the same mountpoint gets A's number (the kernel gives the lowest
// free one); then deciding, and even writing the file, leaves B serving.
func TestHeldAbortFileSparesALaterConnection(t *testing.T) {
	testkit.RequireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting fusectl and a FUSE mount directly need root")
	}
	mnt := t.TempDir()
	a := mount(t, mnt)
	abort, err := fusectl.OpenAbort(a.Conn())
	require.NoError(t, err)
	defer abort.Close()
	var log bytes.Buffer
	w := &watch{pid: os.Getpid(), point: a.Mountpoint, conn: a.Conn(), abort: abort, log: &log}
	require.True(t, w.live(), "the abort file of the serving connection %d is not live", a.Conn())
	require.NoError(t, a.Unmount())
	b := mount(t, mnt)
	defer b.Unmount()
	t.Logf("connection A %d, later connection B %d at the same mountpoint", a.Conn(), b.Conn())
	if w.live() {
		t.Errorf("the abort file of unmounted connection %d is still live (B is %d)", a.Conn(), b.Conn())
	}
	w.endIfStuck()
	if log.Len() != 0 {
		t.Errorf("the guardian of A acted after B was mounted: %s", log.String())
	}
	_, err = abort.Write([]byte("1"))
	require.NoError(t, err, "writing A's abort file after A has gone")
	_, err = os.ReadDir(mnt)
	require.NoError(t, err, "list B's root after A's abort file was written")
}

// mount serves an empty tree on mnt over /dev/fuse.
func mount(t *testing.T, mnt string) *fusefs.Mount {
	m, err := fusefs.MountTree(testtree.New(t, "rwsem"), mnt, fusefs.MountOptions{Transport: uring.Config{Only: uring.DevFuse}})
	require.NoError(t, err)
	return m
}
