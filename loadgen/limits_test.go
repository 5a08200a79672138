package loadgen

import (
	"context"
	"errors"
	"testing"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/sysfs"
)

// TestRunRefusesWhatTheMachineCannotGive checks that thread counts past
// the process's thread limit, buffers past MaxBufSize and files outside
// the target are refused as bad input before anything starts (they used
// to end in "fatal error: thread exhaustion" or "out of memory").
func TestRunRefusesWhatTheMachineCannotGive(t *testing.T) {
	limit, _ := limits.ThreadLimit()
	sim := targets.Target{Kind: targets.TargetSim, Tree: tinyTree}
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Target: sim, Threads: limit + 1, Files: 1, Times: 1}, "Threads"},
		{Config{Target: targets.Target{Kind: targets.TargetPath, Dir: t.TempDir()}, Threads: 12000, Files: 1, Times: 1}, "Threads"},
		{Config{Target: sim, BufSize: 100_000_000_000, Threads: 1, Times: 10}, "BufSize"},
		{Config{Target: sim, BufSize: MaxBufSize + 1, Threads: 1, Times: 1}, "BufSize"},
		{Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, FileList: []string{"/etc/passwd"}, Threads: 1, Times: 1}, "FileList"},
		{Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, FileList: []string{"devices/../../etc/passwd"}, Threads: 1, Times: 1}, "FileList"},
	} {
		_, err := Run(context.Background(), c.cfg)
		var ce *setting.Error
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("Run(threads %d, bufsize %d, files %q): got %v, want a *ConfigError on %s", c.cfg.Threads, c.cfg.BufSize, c.cfg.FileList, err, c.field)
		}
	}
	if limit > 10000 || limit < 1 {
		t.Errorf("ThreadLimit: got %d, want 1 to 10000 (Go's default thread limit)", limit)
	}
}

func TestCompareRefusesTooManyThreads(t *testing.T) {
	limit, _ := limits.ThreadLimit()
	_, err := Compare(context.Background(), CompareConfig{Rows: []Row{{Target: targets.Target{Kind: targets.TargetSim, Tree: tinyTree}}}, Threads: []int{1, limit + 1}})
	wantConfigError(t, "Compare", err, "Threads")
}

// tinyTree is a small synthetic tree, quick to build.
var tinyTree = sysfs.SynthConfig{CPUs: 4, Sockets: 1, MemBlocks: 4}

func wantConfigError(t *testing.T, what string, err error, field string) {
	t.Helper()
	var ce *setting.Error
	if !errors.As(err, &ce) || ce.Field != field {
		t.Errorf("%s: got %v, want a *ConfigError on %s", what, err, field)
	}
}
