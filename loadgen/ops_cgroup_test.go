package loadgen

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
)

// Under --sim every lock that takes writers makes and removes containers'
// cgroups while the workers read every cgroup's stat files; the readers
// see no error, and the writers time each change.
func TestCgroupSim(t *testing.T) {
	for _, lock := range locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters }) {
		t.Run("lock="+lock, func(t *testing.T) {
			c := Config{Target: targets.Target{Kind: targets.TargetSim, Lock: lock, Tree: simTree(8)}, Op: workload.OpCgroup, Threads: 3, Times: 200,
				Churn: 2000, Writers: 2, MinDuration: 50 * time.Millisecond}
			r, err := Run(context.Background(), c)
			require.NoError(t, err)
			if r.Churn == nil || r.Churn.Adds == 0 || len(r.Churn.Errors) != 0 || r.Churn.Writers != 2 || r.Churn.Latency.Count == 0 {
				t.Errorf("writers %+v: want cgroups made and removed by 2 writers, no errors", r.Churn)
			}
			if len(r.Errors) != 0 || r.Unexpected() != 0 || r.FilesPerOp != CgroupFiles || r.Cgroups != 3+32+64 {
				t.Errorf("errors %+v, %d files per op, %d cgroups: want none, %d, 99 (DefaultCgroups' hierarchy)",
					r.Errors, r.FilesPerOp, r.Cgroups, CgroupFiles)
			}
			if len(r.Notes) != 0 {
				t.Errorf("notes %q", r.Notes)
			}
		})
	}
}

// Without writers (lock none) the run has readers only and says why; a
// tree without cgroups is bad input, as is a host whose fs/cgroup is not
// cgroup v2.
func TestCgroupReadersOnly(t *testing.T) {
	r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "none", Tree: simTree(4)}, Op: workload.OpCgroup, Threads: 2, Times: 50})
	require.NoError(t, err)
	if r.Churn != nil || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "no cgroup churn") || len(r.Errors) != 0 {
		t.Errorf("churn %+v, notes %q, errors %+v: want readers only, a note, no errors", r.Churn, r.Notes, r.Errors)
	}
	_, err = Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: t.TempDir()}, Op: workload.OpCgroup})
	if ce := (*setting.Error)(nil); !errors.As(err, &ce) || ce.Field != "Op" || !strings.Contains(ce.Problem, "cgroup v2") {
		t.Errorf("a directory without cgroups: got %v, want a *ConfigError for Op", err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		t.Skip("/sys/fs/cgroup is not cgroup v2 here:", err)
	}
	r, err = Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Op: workload.OpCgroup, Threads: 2, Times: 20})
	if err != nil || r.Churn != nil || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "no cgroup churn") {
		t.Errorf("/sys: %v, churn %+v, notes %q: want readers only, with a note", err, r.Churn, r.Notes)
	}
}

// readCounter is a target that counts the files read in each directory.
type readCounter struct {
	target
	mu   sync.Mutex
	seen map[string]int // directory -> files read; protected by mu
}

func (c *readCounter) readFile(p string, buf []byte) error {
	c.mu.Lock()
	c.seen[p[:strings.LastIndexByte(p, '/')]]++
	c.mu.Unlock()
	return c.target.readFile(p, buf)
}

// Workers share a sweep out: with T workers doing N/T operations each,
// every one of the N cgroups is read once, all of its files.
func TestCgroupCoversEveryCgroupOnce(t *testing.T) {
	const threads = 3
	tree := simTree(4)
	tree.Cgroups = 10 // 3 slices, 5 pods, 10 containers
	st, err := newSimTarget(targets.Target{Kind: targets.TargetSim, Lock: "rwsem", Tree: tree.WithDefaults()}, false, threads)
	require.NoError(t, err)
	p, err := makePlan(st, Config{Op: workload.OpCgroup, Threads: threads, BufSize: 32})
	require.NoError(t, err)
	n := len(p.Cgroups)
	if n != 18 || p.filesPerOp() != CgroupFiles {
		t.Fatalf("%d cgroups, %d files each: want 18, %d", n, p.filesPerOp(), CgroupFiles)
	}
	rc := &readCounter{target: st, seen: map[string]int{}}
	for i := range threads {
		w := newWorker(i, -1, n/threads, 32, rc, p)
		if len(w.buf) < CgroupPage {
			t.Fatalf("a %d-byte read buffer: want a page, to read memory.stat whole", len(w.buf))
		}
		for range n / threads {
			require.NoError(t, w.do())
		}
	}
	if len(rc.seen) != n {
		t.Errorf("%d cgroups read, want %d", len(rc.seen), n)
	}
	for dir, reads := range rc.seen {
		if reads != CgroupFiles {
			t.Errorf("%s: %d files read, want %d (one operation)", dir, reads, CgroupFiles)
		}
	}
}
