package loadgen

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
)

// Under --sim every lock that takes writers hot-adds blocks through the
// probe file while the workers read theirs; the readers see no error.
func TestColdplugSim(t *testing.T) {
	for _, lock := range locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters }) {
		t.Run("lock="+lock, func(t *testing.T) {
			tree := simTree(8)
			tree.MemBlocks = 64
			c := Config{Target: targets.Target{Kind: targets.TargetSim, Lock: lock, Tree: tree}, Op: workload.OpColdplug, Threads: 3, Times: 1000, Churn: 20000}
			r, err := Run(context.Background(), c)
			require.NoError(t, err)
			checkRun(t, r, 3, 1000)
			if r.Churn == nil || r.Churn.Adds == 0 || len(r.Churn.Errors) != 0 || r.Churn.Removes != 0 {
				t.Errorf("writer %+v: want blocks added, none removed, no errors", r.Churn)
			}
			if len(r.Errors) != 0 || r.Unexpected() != 0 || r.FilesPerOp != 5 {
				t.Errorf("errors %+v, %d files per op: want none, 5", r.Errors, r.FilesPerOp)
			}
		})
	}
}

// Without writers (lock none) or without a kernfsim tree (/sys), the run
// has readers only and says why; asking for a rate there is bad input.
func TestColdplugReadersOnly(t *testing.T) {
	tgts := []targets.Target{{Kind: targets.TargetSim, Lock: "none", Tree: simTree(4)}}
	if sysHasMemory() {
		tgts = append(tgts, targets.Target{Kind: targets.TargetPath, Dir: "/sys"})
	}
	for _, tg := range tgts {
		r, err := Run(context.Background(), Config{Target: tg, Op: workload.OpColdplug, Threads: 2, Times: 50})
		require.NoError(t, err)
		if r.Churn != nil || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "no memory hot-add") || len(r.Errors) != 0 {
			t.Errorf("%s: churn %+v, notes %q, errors %+v: want readers only, a note, no errors", tg.Kind, r.Churn, r.Notes, r.Errors)
		}
		if tg.Kind != targets.TargetPath {
			continue
		}
		_, err = Run(context.Background(), Config{Target: tg, Op: workload.OpColdplug, Threads: 1, Times: 1, Churn: 10})
		if ce := (*setting.Error)(nil); !errors.As(err, &ce) || ce.Field != "Churn" || !strings.Contains(ce.Problem, "not a kernfsim tree") {
			t.Errorf("/sys with a rate: got %v, want a *ConfigError for Churn", err)
		}
	}
}

// sysHasMemory reports whether /sys has memory blocks (a container's
// may not).
func sysHasMemory() bool {
	t, err := newPathTarget("/sys")
	return err == nil && len(memBlocks(t)) > 0
}

func TestColdplugNoBlocks(t *testing.T) {
	_, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetPath, Dir: t.TempDir()}, Op: workload.OpColdplug})
	if ce := (*setting.Error)(nil); !errors.As(err, &ce) || ce.Field != "Op" {
		t.Errorf("got %v, want a *ConfigError for Op", err)
	}
}

// blockTarget is a memory directory of n blocks that records which
// blocks' attributes were read.
type blockTarget struct {
	n    int
	mu   sync.Mutex
	seen map[string]int // block name -> attribute reads; protected by mu
}

func (b *blockTarget) readFile(p string, _ []byte) error {
	dir, name, _ := strings.Cut(strings.TrimPrefix(p, memDir+"/"), "/")
	if name == coldplugAbsent {
		return syscall.ENOENT
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen[dir]++
	return nil
}

func (b *blockTarget) stat(string) error            { return syscall.ENOENT }
func (b *blockTarget) readDir(string, []byte) error { return nil }
func (b *blockTarget) abs(rel string) string        { return rel }
func (b *blockTarget) write(string, []byte) error   { return syscall.EPERM }

func (b *blockTarget) list(rel string) ([]entry, error) {
	var ents []entry
	for i := range b.n {
		ents = append(ents, entry{name: "memory" + strconv.Itoa(i), dir: true})
	}
	return ents, nil
}

// Workers share the blocks out: with T workers doing N/T operations each,
// every one of the N blocks is handled once, by one worker.
func TestColdplugCoversEveryBlockOnce(t *testing.T) {
	const n, threads = 60, 4
	bt := &blockTarget{n: n, seen: map[string]int{}}
	p, err := makePlan(bt, Config{Op: workload.OpColdplug, Threads: threads, BufSize: 32})
	require.NoError(t, err)
	bt.seen = map[string]int{} // forget the set-up's reads
	for i := range threads {
		w := newWorker(i, -1, n/threads, 32, bt, p)
		for range n / threads {
			require.NoError(t, w.do())
		}
	}
	if len(bt.seen) != n {
		t.Errorf("%d blocks handled, want %d", len(bt.seen), n)
	}
	for b, reads := range bt.seen {
		if reads != len(coldplugAttrs) {
			t.Errorf("%s: %d attribute reads, want %d (one event)", b, reads, len(coldplugAttrs))
		}
	}
}
