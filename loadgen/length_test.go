package loadgen

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/internal/testproc"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
)

// maskTree is a tree of one attribute, a/mask, whose every read records
// the CPU affinity of the thread reading it: under a sim target that is
// the worker's own thread.
type maskTree struct {
	mu    sync.Mutex
	masks []unix.CPUSet // in read order; protected by mu
}

func (m *maskTree) BuildTree(lock string) (*kernfsim.Tree, error) {
	t := kernfsim.New(locking.MustNew(lock), kernfsim.Options{})
	a, err := t.Mkdir(t.Root(), "a", 0o755)
	if err == nil {
		_, err = t.AddAttr(a, "mask", 0o444, kernfsim.NewFunc(m.record))
	}
	t.Seal()
	return t, err
}

func (m *maskTree) String() string { return "affinity recorder" }

func (m *maskTree) record() string {
	var set unix.CPUSet
	unix.SchedGetaffinity(0, &set)
	m.mu.Lock()
	m.masks = append(m.masks, set)
	m.mu.Unlock()
	return "1\n"
}

// phases splits the reads recorded into the single phase's and the
// concur phase's: the phases run one after the other, last, and each
// worker reads its file once per operation.
func (m *maskTree) phases(t *testing.T, r Result) (single, concur []unix.CPUSet) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	ns, nc := int(r.Single.Workers[0].Ops), int(r.TotalOps())
	if len(m.masks) < ns+nc {
		t.Fatalf("%d reads recorded, want at least %d single and %d concur", len(m.masks), ns, nc)
	}
	end := len(m.masks)
	return m.masks[end-nc-ns : end-nc], m.masks[end-nc:]
}

// The single phase runs unpinned by default, as the seed's, and pinned to
// the first CPU with PinSingle; NoPin leaves the concur workers unpinned,
// whatever PinSingle says. Checked on the affinity of the threads that did
// the operations.
func TestRunPinning(t *testing.T) {
	cpus := limits.AllowedCPUs()
	if len(cpus) < 2 {
		t.Skipf("%d CPU allowed: a pinned thread's affinity is an unpinned one's", len(cpus))
	}
	var all unix.CPUSet
	unix.SchedGetaffinity(0, &all)
	for _, tc := range []struct {
		name                   string
		noPin, pinSingle       bool
		singlePinned, workPins bool
	}{
		{"default", false, false, false, true},
		{"pin-single", false, true, true, true},
		{"no-pin", true, false, false, false},
		{"no-pin pin-single", true, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &maskTree{}
			r, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetSim, Lock: "rwsem", Build: m},
				FileList: []string{"a/mask"}, Threads: 2, Times: 20, NoPin: tc.noPin, PinSingle: tc.pinSingle})
			require.NoError(t, err)
			if r.SinglePinned != tc.singlePinned || r.Pinned != tc.workPins {
				t.Errorf("SinglePinned %v, Pinned %v: want %v, %v", r.SinglePinned, r.Pinned, tc.singlePinned, tc.workPins)
			}
			wantCPU := -1
			if tc.singlePinned {
				wantCPU = cpus[0]
			}
			if got := r.Single.Workers[0].CPU; got != wantCPU {
				t.Errorf("single worker's CPU: got %d, want %d", got, wantCPU)
			}
			single, concur := m.phases(t, r)
			for _, set := range single {
				if pinned := set.Count() == 1 && set.IsSet(cpus[0]); pinned != tc.singlePinned || !pinned && set != all {
					t.Fatalf("single phase read on a thread of affinity %v (pinned %v): want pinned %v, else the process's %v",
						set, pinned, tc.singlePinned, all)
				}
			}
			for _, set := range concur {
				if pinned := set.Count() == 1; pinned != tc.workPins || !pinned && set != all {
					t.Fatalf("concur phase read on a thread of affinity %v: want pinned %v, else the process's %v", set, tc.workPins, all)
				}
			}
		})
	}
}

// With a MinDuration, every worker goes on past Times until the duration
// has passed since its phase's start barrier, and the figures stay those
// of the operations done.
func TestRunMinDuration(t *testing.T) {
	c := simConfig("rwsem")
	c.Threads, c.Times, c.MinDuration = 2, 1, 40*time.Millisecond
	r, err := Run(context.Background(), c)
	require.NoError(t, err)
	if r.MinDuration != c.MinDuration {
		t.Errorf("Result.MinDuration %v, want %v", r.MinDuration, c.MinDuration)
	}
	for _, ph := range []struct {
		name string
		p    Phase
		n    int
	}{{"single", r.Single, 1}, {"concur", r.Concur, c.Threads}} {
		checkMinDuration(t, ph.name, ph.p, ph.n, c)
	}
	if got, want := r.SinglePerOp(), r.Single.Workers[0].Total/time.Duration(r.Single.Workers[0].Ops); got != want {
		t.Errorf("SinglePerOp %v, want total/ops %v", got, want)
	}
	if got, want := r.WallPerOp(), r.Concur.Wall*time.Duration(c.Threads)/time.Duration(r.TotalOps()); got != want {
		t.Errorf("WallPerOp %v, want wall x threads / ops %v", got, want)
	}
	if got, want := r.Efficiency(), efficiency(r.SinglePerOp(), r.WallPerOp(), c.Threads, r.CPUs); got != want || got <= 0 {
		t.Errorf("Efficiency %v, want %v from the per-ops", got, want)
	}
}

// checkMinDuration checks a phase of n workers run under c.MinDuration.
func checkMinDuration(t *testing.T, name string, p Phase, n int, c Config) {
	t.Helper()
	if len(p.Workers) != n || p.Wall < c.MinDuration {
		t.Fatalf("%s: %d workers, wall %v: want %d, at least %v", name, len(p.Workers), p.Wall, n, c.MinDuration)
	}
	var ops int64
	for _, w := range p.Workers {
		ops += w.Ops
		if w.Ops < int64(c.Times) || w.Done < c.MinDuration || w.Done > p.Wall {
			t.Errorf("%s worker %+v: want at least %d ops and done at %v or later, within the wall %v", name, w, c.Times, c.MinDuration, p.Wall)
		}
		// A worker that began promptly, each of whose operations took
		// less than half the duration, cannot have stopped at Times.
		prompt, quick := w.Done-w.Total < c.MinDuration/2, p.Latency.Max < c.MinDuration/2
		if prompt && quick && w.Ops <= int64(c.Times) {
			t.Errorf("%s worker %+v: loop not extended past %d ops, operations of at most %v", name, w, c.Times, p.Latency.Max)
		}
	}
	if p.Latency.Count != ops || p.OpsPerWorker() != float64(ops)/float64(n) {
		t.Errorf("%s: %d latencies, %v ops per worker: want %d in all", name, p.Latency.Count, p.OpsPerWorker(), ops)
	}
}

// Workers that did different counts (a phase a MinDuration extended): the
// wall per-op is over their mean.
func TestWallPerOpMeanOps(t *testing.T) {
	p := Phase{Ran: true, Wall: 100 * time.Millisecond, Workers: []WorkerResult{{Ops: 1000}, {Ops: 3000}}}
	if got, want := p.WallPerOp(), 50*time.Microsecond; got != want {
		t.Errorf("wallPerOp: got %v, want %v (100ms over 2000 ops per worker)", got, want)
	}
	if got := p.OpsPerWorker(); got != 2000 {
		t.Errorf("OpsPerWorker: got %v, want 2000", got)
	}
	if got := (Phase{}).OpsPerWorker(); got != 0 {
		t.Errorf("OpsPerWorker of no workers: got %v, want 0", got)
	}
}

// Worker processes get the duration in their spec and count it from the
// barrier they see.
func TestRunProcsMinDuration(t *testing.T) {
	testproc.RequireSys(t)
	c := Config{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, Threads: 2, Times: 1, MinDuration: 30 * time.Millisecond,
		Procs: true, WorkerCommand: testproc.Self(t, "__worker")}
	r, err := Run(context.Background(), c)
	require.NoError(t, err)
	checkMinDuration(t, "single", r.Single, 1, c)
	checkMinDuration(t, "concur", r.Concur, 2, c)
}

func TestRunBadMinDuration(t *testing.T) {
	c := simConfig("rwsem")
	c.MinDuration = -time.Second
	_, err := Run(context.Background(), c)
	if ce, ok := err.(*setting.Error); !ok || ce.Field != "MinDuration" {
		t.Errorf("got %v, want a *ConfigError for MinDuration", err)
	}
}

func TestRowOrder(t *testing.T) {
	for _, tc := range []struct {
		rep, n int
		want   []int
	}{
		{0, 3, []int{0, 1, 2}}, {1, 3, []int{2, 1, 0}}, {2, 3, []int{1, 2, 0}}, {3, 3, []int{0, 2, 1}},
		{4, 3, []int{2, 0, 1}}, {0, 1, []int{0}}, {1, 1, []int{0}},
	} {
		if got := RowOrder(tc.rep, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("RowOrder(%d, %d) = %v, want %v", tc.rep, tc.n, got, tc.want)
		}
	}
	for n := 1; n <= 9; n++ {
		first, after := map[int]bool{}, map[int]map[int]bool{}
		for rep := range 2 * n {
			order := RowOrder(rep, n)
			if s := slices.Sorted(slices.Values(order)); !slices.Equal(s, RowOrder(0, n)) {
				t.Fatalf("RowOrder(%d, %d) = %v: not every row once", rep, n, order)
			}
			if rep%2 == 1 { // ABBA: each row's mean position over the pair is the middle
				prev := RowOrder(rep-1, n)
				for i := range order {
					if slices.Index(prev, i)+slices.Index(order, i) != n-1 {
						t.Fatalf("RowOrder(%d, %d) = %v after %v: row %d off the middle", rep, n, order, prev, i)
					}
				}
			}
			first[order[0]] = true
			for k := 1; k < n; k++ {
				if after[order[k]] == nil {
					after[order[k]] = map[int]bool{}
				}
				after[order[k]][order[k-1]] = true
			}
		}
		if len(first) != n {
			t.Errorf("%d rows: only %v run first in %d repeats", n, first, 2*n)
		}
		for row, prev := range after {
			if n >= 3 && len(prev) < 2 {
				t.Errorf("%d rows: row %d always runs right after %v", n, row, prev)
			}
		}
	}
}
