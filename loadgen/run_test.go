package loadgen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/internal/testproc"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

func simConfig(lock string) Config {
	return Config{Target: targets.Target{Kind: targets.TargetSim, Lock: lock}, Threads: 3, Times: 100}
}

// checkRun checks the shape every finished run has.
func checkRun(t *testing.T, r Result, threads, times int) {
	t.Helper()
	if !r.Single.Ran || len(r.Single.Workers) != 1 || r.Single.Workers[0].Ops != int64(times) {
		t.Errorf("single phase: %+v, want 1 worker with %d ops", r.Single, times)
	}
	if got := len(r.Concur.Workers); got != threads {
		t.Fatalf("concur workers: got %d, want %d", got, threads)
	}
	seen := map[int]bool{}
	for _, w := range r.Concur.Workers {
		if w.Ops != int64(times) || w.Total <= 0 || seen[w.Worker] {
			t.Errorf("worker %+v: want %d ops, a positive total, each worker once", w, times)
		}
		seen[w.Worker] = true
	}
	if got, want := r.Concur.Latency.Count, int64(threads*times); got != want {
		t.Errorf("concur latency count: got %d, want %d", got, want)
	}
	if r.Concur.Latency.P50 <= 0 || r.Concur.Latency.Max < r.Concur.Latency.P99 || r.Concur.Wall <= 0 {
		t.Errorf("concur latency %+v, wall %v: want positive, ordered figures", r.Concur.Latency, r.Concur.Wall)
	}
	if r.Efficiency() <= 0 || r.Ratio() <= 0 || r.OpsPerSec() <= 0 {
		t.Errorf("efficiency %v, ratio %v, ops/s %v: want positive", r.Efficiency(), r.Ratio(), r.OpsPerSec())
	}
}

func TestRunSimOps(t *testing.T) {
	for _, op := range workload.Ops {
		for _, missing := range []bool{false, true} {
			if missing && op != workload.OpOpenReadClose && op != workload.OpStat || op == workload.OpLstopo { // lstopo needs a filesystem
				continue
			}
			t.Run(OpLabel(op, missing), func(t *testing.T) {
				c := simConfig("rwsem")
				c.Op, c.Missing = op, missing
				c.Target.Tree.CPUs, c.Target.Tree.MemBlocks = 8, 4
				if op == workload.OpHwloc {
					c.Times = 3
				}
				r, err := Run(context.Background(), c)
				require.NoError(t, err)
				checkRun(t, r, c.Threads, c.Times)
				if len(r.Errors) != 0 {
					t.Errorf("errors: %+v, want none", r.Errors)
				}
				if op == workload.OpHwloc && r.FilesPerOp < 8*10 {
					t.Errorf("hwloc reads %d files per discovery, want every topology and cache file of 8 CPUs", r.FilesPerOp)
				}
			})
		}
	}
}

func TestRunSimLocks(t *testing.T) {
	for _, lock := range locking.Names {
		t.Run("lock="+lock, func(t *testing.T) {
			r, err := Run(context.Background(), simConfig(lock))
			require.NoError(t, err)
			checkRun(t, r, 3, 100)
			if r.Target.Lock != lock || r.Files[0] != "devices/system/cpu/cpu0/topology/core_id" {
				t.Errorf("lock %q, files %q: want %s and cpu0's core_id first", r.Target.Lock, r.Files, lock)
			}
		})
	}
}

// Churn under --sim: devices come and go through the tree's own
// new_device/delete_device files while workers read them; only ENOENT and
// ENODEV on churned files may be recorded.
func TestRunSimChurnRecordsOnlyExpected(t *testing.T) {
	for _, lock := range locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters }) {
		t.Run("lock="+lock, func(t *testing.T) {
			c := simConfig(lock)
			c.Churn, c.Threads, c.Times = 5000, 2, 3000
			r, err := Run(context.Background(), c)
			require.NoError(t, err)
			if r.Churn == nil || r.Churn.Adds == 0 || len(r.Churn.Errors) != 0 {
				t.Fatalf("churn %+v: want devices added and no writer errors", r.Churn)
			}
			for _, e := range r.Errors {
				if !e.Expected() {
					t.Errorf("unexpected error recorded: %s x%d on %s (churn %v)", e.Name(), e.Count, e.Path, e.Churn)
				}
			}
			if r.Unexpected() != 0 {
				t.Errorf("Unexpected() = %d, want 0", r.Unexpected())
			}
		})
	}
}

// Several writers churn devices of their own at once, each timing its
// changes; with NoChurnReads the workers keep to their operation.
func TestRunWriters(t *testing.T) {
	c := simConfig("rwsem")
	c.Target.Tree = simTree(8)
	c.Writers, c.Churn, c.Threads, c.Times, c.MinDuration, c.NoChurnReads = 3, 2000, 2, 100, 50*time.Millisecond, true
	r, err := Run(context.Background(), c)
	require.NoError(t, err)
	ch := r.Churn
	if ch == nil || ch.Writers != 3 || ch.Rate != 2000 || len(ch.Errors) != 0 || ch.Adds == 0 {
		t.Fatalf("churn %+v: want 3 writers at 2000/s each, devices added, no errors", ch)
	}
	if ch.Latency.Count != ch.Adds+ch.Removes || ch.Latency.P50 <= 0 || ch.Latency.P99 < ch.Latency.P50 {
		t.Errorf("latency %+v over %d adds and %d removes: want one per change", ch.Latency, ch.Adds, ch.Removes)
	}
	for _, ph := range []Phase{r.Single, r.Concur} {
		if ph.Writes == nil || ph.Writes.Count > ch.Latency.Count {
			t.Errorf("phase writes %+v: want a window within the run's %d changes", ph.Writes, ch.Latency.Count)
		}
	}
	// Each change takes the write side at least once; of those the phase
	// counted, only each writer's one in flight when the lock was first
	// read may have taken it before.
	if l := r.Concur.Lock; l == nil || l.WriteAcquisitions+3 < r.Concur.Writes.Count {
		t.Errorf("lock %+v: want a write-side acquisition per change of the phase (%d)", l, r.Concur.Writes.Count)
	}
	if len(r.Errors) != 0 {
		t.Errorf("errors %+v: the workers read no churned device", r.Errors)
	}
	c = simConfig("rwsem")
	c.Target.Tree = simTree(8)
	r, err = Run(context.Background(), c)
	if err != nil || r.Churn != nil || r.Concur.Writes != nil {
		t.Errorf("without writers: %v, churn %+v, writes %+v", err, r.Churn, r.Concur.Writes)
	}
}

func TestRunPathSys(t *testing.T) {
	testproc.RequireSys(t)
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Threads: 2, Times: 200})
	require.NoError(t, err)
	checkRun(t, r, 2, 200)
	if r.Files[0] != "devices/system/cpu/cpu0/topology/core_id" || len(r.Errors) != 0 {
		t.Errorf("files %q, errors %+v: want cpu0's core_id and no errors", r.Files, r.Errors)
	}
}

// A directory that is not a sysfs (tmpfs, say): its regular files are used.
func TestRunPathPlainDir(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a/x", "a/y", "b/z"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("1\n"), 0o644))
	}
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: dir}, Threads: 4, Times: 50})
	require.NoError(t, err)
	checkRun(t, r, 4, 50)
	if strings.Join(r.Files, " ") != "a/x a/y" {
		t.Errorf("files %q, want the first 2 regular files breadth first", r.Files)
	}
}

func TestRunProcs(t *testing.T) {
	testproc.RequireSys(t)
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Threads: 3, Times: 100,
		Procs: true, WorkerCommand: testproc.Self(t, "__worker")})
	require.NoError(t, err)
	checkRun(t, r, 3, 100)
	if !r.Procs || len(r.Errors) != 0 {
		t.Errorf("procs %v, errors %+v", r.Procs, r.Errors)
	}
}

func TestRunProcsWorkerFails(t *testing.T) {
	testproc.RequireSys(t)
	_, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Threads: 2, Times: 10,
		Procs: true, WorkerCommand: testproc.Self(t, "__fail")})
	if err == nil || !strings.Contains(err.Error(), "helper failed on purpose") {
		t.Errorf("got %v, want the worker's stderr in the error", err)
	}
}

func TestRunBadInput(t *testing.T) {
	sim := targets.Target{Kind: targets.TargetSim}
	for _, tc := range []struct {
		name  string
		c     Config
		field string
	}{
		{"threads", Config{Target: sim, Threads: -1}, "Threads"},
		{"times", Config{Target: sim, Times: -5}, "Times"},
		{"op", Config{Target: sim, Op: "bogus"}, "Op"},
		{"lock", Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "spin"}}, "Lock"},
		{"missing readdir", Config{Target: sim, Op: workload.OpReaddir, Missing: true}, "Missing"},
		{"missing exists", Config{Target: sim, Missing: true, MissingPath: "devices/system/cpu/cpu0/topology/core_id"}, "MissingPath"},
		{"procs sim", Config{Target: sim, Procs: true, WorkerCommand: []string{"x"}}, "Procs"},
		{"churn none", Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "none"}, Churn: 10}, "Churn"},
		{"writers none", Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "none"}, Writers: 1}, "Writers"},
		{"writers negative", Config{Target: sim, Writers: -1}, "Writers"},
		{"writers too many", Config{Target: sim, Writers: MaxWriters + 1}, "Writers"},
		{"cgroup none", Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "none", Tree: simTree(4)}, Op: workload.OpCgroup, Writers: 2}, "Writers"},
		{"cgroup without a hierarchy", Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/proc/self"}, Op: workload.OpCgroup}, "Op"},
		{"no dir", Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/does/not/exist"}}, "Dir"},
		{"not a dir", Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/proc/self/status"}}, "Dir"},
		{"unreadable file", Config{Target: sim, FileList: []string{"bus/cpu/uevent"}}, "FileList"},
		{"too many files", Config{Target: sim, Files: 3, FileList: []string{"a", "b"}}, "Files"},
		{"tree", Config{Target: targets.Target{Kind: targets.TargetSim, Tree: simTree(3)}}, "Tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.c)
			var ce *setting.Error
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("got %v, want a *ConfigError for %s", err, tc.field)
			}
		})
	}
}

func TestRunNoServer(t *testing.T) {
	_, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetKernfsim}})
	if !errors.Is(err, serverproc.ErrNoServer) {
		t.Errorf("got %v, want ErrNoServer", err)
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := simConfig("mutex")
	c.Times = 1 << 30
	c.Target.Tree = simTree(4)
	c.Progress = func(p Progress) {
		if p.Done > 0 {
			cancel()
		}
	}
	r, err := Run(ctx, c)
	if !errors.Is(err, context.Canceled) || !r.Interrupted {
		t.Fatalf("got %v, interrupted %v: want the context's error and Interrupted", err, r.Interrupted)
	}
	if !r.Single.Ran || r.Single.Workers[0].Ops == 0 || r.Single.Workers[0].Ops == int64(c.Times) {
		t.Errorf("single %+v: want a partial measurement", r.Single.Workers)
	}
}

func TestErrnoOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want syscall.Errno
	}{
		{syscall.ENODEV, syscall.ENODEV},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOTCONN}, syscall.ENOTCONN},
		{os.ErrNotExist, syscall.ENOENT},
		{os.ErrPermission, syscall.EACCES},
		{errors.New("other"), syscall.EIO},
	} {
		if got := kernfsim.Errno(tc.err); got != tc.want {
			t.Errorf("kernfsim.Errno(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func simTree(cpus int) (c sysfs.SynthConfig) {
	c.CPUs = cpus
	return c
}
