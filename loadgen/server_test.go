package loadgen

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/loadgen/harness"
)

func fakeServer(t *testing.T) *harness.ServerConfig {
	t.Helper()
	fusetest.RequireFUSE(t)
	requireSys(t)
	return &harness.ServerConfig{Command: self(t, "__fakeserve")}
}

func TestServerLifecycle(t *testing.T) {
	sc := fakeServer(t)
	s, err := harness.StartServer(context.Background(), *sc)
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
	if l := leftovers(t); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
}

func TestServerExitsBeforeMount(t *testing.T) {
	_, err := harness.StartServer(context.Background(), harness.ServerConfig{Command: self(t, "__fail")})
	if err == nil || !strings.Contains(err.Error(), "exited before it mounted") || !strings.Contains(err.Error(), "on purpose") {
		t.Errorf("got %v, want the exit and the server's stderr", err)
	}
	if l := leftovers(t); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
}

func TestServerCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// This server never mounts anything.
	_, err := harness.StartServer(ctx, harness.ServerConfig{Command: []string{"sh", "-c", "sleep 10", "sh"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if l := leftovers(t); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
}

// The default target: Run starts the server, measures through the mount
// and removes everything, also when interrupted.
func TestRunKernfsimTarget(t *testing.T) {
	sc := fakeServer(t)
	r, err := Run(context.Background(), Config{Target: harness.Target{Kind: harness.TargetKernfsim, Lock: "rcu"}, Threads: 2, Times: 100, Server: sc})
	require.NoError(t, err)
	checkRun(t, r, 2, 100)
	if !strings.Contains(r.Target.Dir, "loadgen-kernfsim-") || len(r.Errors) != 0 {
		t.Errorf("target %+v, errors %+v", r.Target, r.Errors)
	}
	if l := leftovers(t); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
	// Interrupted once the workers have done something, not after a fixed
	// time: starting the server may take longer than any such time.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupt := func(p Progress) {
		if p.Done > 0 {
			cancel()
		}
	}
	r, err = Run(ctx, Config{Target: harness.Target{Kind: harness.TargetKernfsim}, Threads: 2, Times: 1 << 30, Server: sc, Progress: interrupt})
	if !errors.Is(err, context.Canceled) || !r.Interrupted {
		t.Errorf("got %v, interrupted %v: want the context's error and Interrupted", err, r.Interrupted)
	}
	if l := leftovers(t); len(l) != 0 {
		t.Errorf("left behind after an interrupted run: %q", l)
	}
}

// A mount whose server is gone is bad input with a way out.
func TestRunDeadMount(t *testing.T) {
	sc := fakeServer(t)
	s, err := harness.StartServer(context.Background(), *sc)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, unix.Kill(s.Pid(), unix.SIGKILL))
	if _, exited := s.ExitStatus(time.Minute); !exited {
		t.Fatal("the server did not die of SIGKILL")
	}
	_, err = Run(context.Background(), Config{Target: harness.Target{Kind: harness.TargetPath, Dir: s.Mountpoint()}, Threads: 1, Times: 10})
	var ce *harness.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Problem, "transport endpoint is not connected") || !strings.Contains(ce.Hint, "umount -l") {
		t.Errorf("got %v, want a *ConfigError saying the server is gone and how to recover", err)
	}
}

// isFUSE reports whether dir is a FUSE mount.
func isFUSE(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.FUSE_SUPER_MAGIC
}
