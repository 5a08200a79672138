package loadgen

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/internal/testproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
)

// checkDone checks every concur worker's time to done: at least its own
// loop's time (it counts from the start barrier, before the loop began),
// at most the phase's wall time.
func checkDone(t *testing.T, r Result) {
	t.Helper()
	for _, w := range r.Concur.Workers {
		if w.Done < w.Total || w.Done > r.Concur.Wall+time.Millisecond {
			t.Errorf("worker %d: done %v, own total %v, phase wall %v: want total <= done <= wall", w.Worker, w.Done, w.Total, r.Concur.Wall)
		}
	}
	if med, last := r.TimeToDone(); med <= 0 || last < med {
		t.Errorf("time to done: median %v, last %v", med, last)
	}
}

// hasSuffix reports whether some name ends with suffix.
func hasSuffix(names []string, suffix string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, suffix) })
}

// The synthetic tree has no cpufreq or cpu_capacity and 4 cache levels:
// those names, and cache/index4..9, are looked up missing each discovery,
// and ENOENT there is no error.
func TestHwlocSim(t *testing.T) {
	for _, lock := range locking.Names {
		t.Run("lock="+lock, func(t *testing.T) {
			c := Config{Target: targets.Target{Kind: targets.TargetSim, Lock: lock, Tree: simTree(8)}, Op: workload.OpHwloc, Threads: 3, Times: 2}
			r, err := Run(context.Background(), c)
			require.NoError(t, err)
			checkRun(t, r, 3, 2)
			checkDone(t, r)
			if len(r.Errors) != 0 {
				t.Errorf("errors %+v, want none", r.Errors)
			}
			for _, want := range []string{"cpu7/topology/core_id", "cpu0/cache/index3/size", "node1/distance", "node0/meminfo",
				"cpu0/cpufreq/cpuinfo_max_freq", "cpu7/cache/index9/shared_cpu_map", "cpu/possible"} {
				if !hasSuffix(r.Files, want) {
					t.Errorf("discovery lacks %s", want)
				}
			}
			// 2 listings, 4 global files, 8 CPUs x (topology + caches + 6
			// missing indexes + 3 names), 2 nodes x 8 names.
			if r.FilesPerOp < 2+4+8*(6+3)+2*8 {
				t.Errorf("%d files per discovery: too few", r.FilesPerOp)
			}
		})
	}
}

// On the real /sys the discovery reads and probes without an error, as
// threads and as processes (MPI ranks), and each worker's time to done
// comes back from its process.
func TestHwlocSys(t *testing.T) {
	testproc.RequireSys(t)
	for _, procs := range []bool{false, true} {
		c := Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Op: workload.OpHwloc, Threads: 3, Times: 1, Procs: procs}
		if procs {
			c.WorkerCommand = testproc.Self(t, "__worker")
		}
		r, err := Run(context.Background(), c)
		require.NoError(t, err)
		checkRun(t, r, 3, 1)
		checkDone(t, r)
		if len(r.Errors) != 0 || !hasSuffix(r.Files, "cpu0/topology/core_id") {
			t.Errorf("procs %v: errors %+v, files %q", procs, r.Errors, r.Files)
		}
	}
}

func TestTimeToDone(t *testing.T) {
	r := Result{Concur: Phase{Workers: []WorkerResult{{Done: 30}, {Done: 10}, {Done: 20}, {Done: 50}}}}
	if med, last := r.TimeToDone(); med != 25 || last != 50 {
		t.Errorf("got median %v, last %v, want 25ns, 50ns", med, last)
	}
	r.Concur.Workers = r.Concur.Workers[:3]
	if med, last := r.TimeToDone(); med != 20 || last != 30 {
		t.Errorf("got median %v, last %v, want 20ns, 30ns", med, last)
	}
}

// The real lstopo, with HWLOC_FSROOT on a directory holding a sys
// symlink to the target; its root is removed afterwards.
func TestLstopoSys(t *testing.T) {
	testproc.RequireSys(t)
	if _, err := exec.LookPath("lstopo"); err != nil {
		t.Skip("no lstopo:", err)
	}
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Op: workload.OpLstopo, Threads: 2, Times: 1})
	require.NoError(t, err)
	checkRun(t, r, 2, 1)
	checkDone(t, r)
	if len(r.Errors) != 0 {
		t.Errorf("errors %+v", r.Errors)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "loadgen-hwloc-root-*")); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
	_, err = Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetSim}, Op: workload.OpLstopo})
	if ce := (*setting.Error)(nil); !errors.As(err, &ce) || ce.Field != "Op" {
		t.Errorf("lstopo under sim: got %v, want a *ConfigError for Op", err)
	}
}
