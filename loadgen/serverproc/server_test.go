package serverproc_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/loadgen/internal/testproc"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
)

// The test binary doubles as the stand-in servers the tests start
// (testproc.Main).
func TestMain(m *testing.M) { testproc.Main(m, nil) }

func TestServerLifecycle(t *testing.T) {
	sc := testproc.FakeServer(t)
	s, err := serverproc.StartServer(context.Background(), *sc)
	require.NoError(t, err)
	if !isFUSE(s.Mountpoint()) {
		t.Fatal("StartServer returned before the mount served")
	}
	if _, err := os.Stat(s.Mountpoint() + "/devices/system/cpu/cpu0/topology/core_id"); err != nil {
		t.Errorf("the mount does not serve the tree: %v", err)
	}
	require.NoError(t, s.Close())
	if _, err := os.Stat(s.Mountpoint()); !os.IsNotExist(err) {
		t.Errorf("mountpoint %s still there after Close: %v", s.Mountpoint(), err)
	}
	if l := testproc.Leftovers(t); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
}

func TestServerExitsBeforeMount(t *testing.T) {
	_, err := serverproc.StartServer(context.Background(), serverproc.ServerConfig{Command: testproc.Self(t, "__fail")})
	if err == nil || !strings.Contains(err.Error(), "exited before it mounted") || !strings.Contains(err.Error(), "on purpose") {
		t.Errorf("got %v, want the exit and the server's stderr", err)
	}
	if l := testproc.Leftovers(t); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
}

func TestServerCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// This server never mounts anything.
	_, err := serverproc.StartServer(ctx, serverproc.ServerConfig{Command: []string{"sh", "-c", "sleep 10", "sh"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if l := testproc.Leftovers(t); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
}

// isFUSE reports whether dir is a FUSE mount.
func isFUSE(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.FUSE_SUPER_MAGIC
}
