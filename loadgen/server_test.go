package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/internal/testproc"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// The default target: Run starts the server, measures through the mount
// and removes everything, also when interrupted.
func TestRunKernfsimTarget(t *testing.T) {
	sc := testproc.FakeServer(t)
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetKernfsim, Lock: "rcu"}, Threads: 2, Times: 100, Server: sc})
	require.NoError(t, err)
	checkRun(t, r, 2, 100)
	if !strings.Contains(r.Target.Dir, "loadgen-kernfsim-") || len(r.Errors) != 0 {
		t.Errorf("target %+v, errors %+v", r.Target, r.Errors)
	}
	if l := testproc.Leftovers(t); len(l) != 0 {
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
	r, err = Run(ctx, Config{Target: targets.Target{Kind: targets.TargetKernfsim}, Threads: 2, Times: 1 << 30, Server: sc, Progress: interrupt})
	if !errors.Is(err, context.Canceled) || !r.Interrupted {
		t.Errorf("got %v, interrupted %v: want the context's error and Interrupted", err, r.Interrupted)
	}
	if l := testproc.Leftovers(t); len(l) != 0 {
		t.Errorf("left behind after an interrupted run: %q", l)
	}
}

// A mount whose server is gone is bad input with a way out.
func TestRunDeadMount(t *testing.T) {
	sc := testproc.FakeServer(t)
	s, err := serverproc.StartServer(context.Background(), *sc)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, unix.Kill(s.Pid(), unix.SIGKILL))
	if _, exited := s.ExitStatus(time.Minute); !exited {
		t.Fatal("the server did not die of SIGKILL")
	}
	_, err = Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: s.Mountpoint()}, Threads: 1, Times: 10})
	var ce *setting.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Problem, "transport endpoint is not connected") || !strings.Contains(ce.Hint, "umount -l") {
		t.Errorf("got %v, want a *ConfigError saying the server is gone and how to recover", err)
	}
}
