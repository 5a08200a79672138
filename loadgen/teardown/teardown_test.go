package teardown

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// simTeardown is a storm in process on a small tree.
func simTeardown(count, batch, readers int, locks ...string) Config {
	return Config{Target: targets.Target{Kind: targets.TargetSim, Tree: sysfs.SynthConfig{CPUs: 4, Sockets: 1, MemBlocks: 4}},
		Locks: locks, Count: count, Batch: batch, Readers: readers}
}

// Every policy and reference lock removes every device and completes
// every teardown by the barrier; the counters show how: a grace period
// per call (normal), an expedited one per call, or few shared ones
// (deferred), none for mutex and rwsem.
func TestTeardownSimPolicies(t *testing.T) {
	const n = 40
	res, err := Run(context.Background(), simTeardown(n, 1, 0, "rcu", "mutex", "rwsem"))
	require.NoError(t, err)
	want := []string{"rcu/normal", "rcu/expedited", "rcu/deferred", "mutex/n/a", "rwsem/n/a"}
	if len(res.Runs) != len(want) {
		t.Fatalf("got %d runs, want %d", len(res.Runs), len(want))
	}
	by := map[string]Storm{}
	for i, r := range res.Runs {
		if got := r.Lock + "/" + r.GP; got != want[i] {
			t.Errorf("run %d is %s, want %s", i, got, want[i])
		}
		by[r.GP] = r
		if r.Removed != n || r.Calls != n || r.Completed != n || r.Counts.Completed != 2*n {
			t.Errorf("%s/%s: removed %d in %d calls, completed %d (%d teardowns), want %d, %d, %d, %d",
				r.Lock, r.GP, r.Removed, r.Calls, r.Completed, r.Counts.Completed, n, n, n, 2*n)
		}
		if r.UntilComplete < r.Total || r.Caller.Count != n {
			t.Errorf("%s/%s: until complete %v before the storm's end %v, or %d latencies", r.Lock, r.GP, r.UntilComplete, r.Total, r.Caller.Count)
		}
		if !targets.GracePeriods(r.Lock) && (r.Counts.GracePeriods != 0 || r.Counts.Queued != 0) {
			t.Errorf("%s: %+v, want no grace period and nothing queued", r.Lock, r.Counts)
		}
	}
	normal, exp, def := by["normal"], by["expedited"], by["deferred"]
	// Sequential callers cannot share a grace period that must begin after
	// each arrived.
	if normal.Counts.GracePeriods < n || normal.Counts.Expedited != 0 || exp.Counts.Expedited < n {
		t.Errorf("normal %+v, expedited %+v: want a grace period per call of each kind", normal.Counts, exp.Counts)
	}
	if def.Counts.Queued != 2*n || def.Counts.GracePeriods > n/2 {
		t.Errorf("deferred %+v: want %d queued sharing few grace periods", def.Counts, 2*n)
	}
	// A normal grace period waits for a 4 ms tick; the others do not.
	// Medians, so that a few calls preempted on a busy machine do not
	// decide.
	if normal.Caller.P50 < 10*max(def.Caller.P50, exp.Caller.P50) {
		t.Errorf("caller p50: normal %v, expedited %v, deferred %v: want normal 10x slower",
			normal.Caller.P50, exp.Caller.P50, def.Caller.P50)
	}
}

// Removing every device in one call shares one grace period.
func TestTeardownBatchSharesOneGracePeriod(t *testing.T) {
	for _, batch := range []int{300, 100} {
		cfg := simTeardown(300, batch, 0)
		cfg.GPs = []kernfsim.GPPolicy{kernfsim.GPNormal}
		res, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		r := res.Runs[0]
		calls := 300 / batch
		if r.Calls != calls || r.Completed != 300 || r.Counts.GracePeriods > uint64(2*calls) {
			t.Errorf("batch %d: %d calls, %d completed, %d grace periods; want %d calls, 300, at most %d",
				batch, r.Calls, r.Completed, r.Counts.GracePeriods, calls, 2*calls)
		}
	}
}

// Readers read remaining devices during the storm; a device vanishing
// under one is expected, nothing else is.
func TestTeardownReaders(t *testing.T) {
	cfg := simTeardown(60, 1, 2)
	cfg.GPs = []kernfsim.GPPolicy{kernfsim.GPNormal, kernfsim.GPDeferred}
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	for _, r := range res.Runs {
		rd := r.Reader
		// A deferred storm may end before a reader is scheduled; a normal
		// one lasts 60 grace periods.
		if rd == nil || rd.Readers != 2 || (r.GP == "normal" && rd.Latency.Count == 0) {
			t.Fatalf("%s: readers %+v", r.GP, rd)
		}
		for _, e := range rd.Errors {
			if !e.Expected() {
				t.Errorf("%s: unexpected reader error %+v", r.GP, e)
			}
		}
	}
}

func TestTeardownConfigErrors(t *testing.T) {
	mount := targets.Target{Kind: targets.TargetPath, Dir: "/nonexistent"}
	readOnly := locking.NamesWhere(func(t locking.Traits) bool { return !t.AcceptsWriters })
	tiny := targets.Target{Kind: targets.TargetSim, Tree: sysfs.SynthConfig{CPUs: 4, Sockets: 1, MemBlocks: 4}}
	limit, _ := limits.ThreadLimit()
	for _, c := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"lock refusing writers", Config{Target: targets.Target{Kind: targets.TargetSim}, Locks: readOnly}, "Lock"},
		{"batch over count", Config{Target: targets.Target{Kind: targets.TargetSim}, Count: 5, Batch: 6}, "Batch"},
		{"negative readers", Config{Target: targets.Target{Kind: targets.TargetSim}, Readers: -1}, "Count"},
		{"too many attrs", Config{Target: targets.Target{Kind: targets.TargetSim}, Attrs: 1000}, "Attrs"},
		{"over a page", Config{Target: mount, Batch: 1000}, "Batch"},
		{"over the server's limit", Config{Target: mount, Count: sysfs.DefaultMaxDevices + 1}, "Count"},
		{"bad tree", Config{Target: targets.Target{Kind: targets.TargetSim, Tree: sysfs.SynthConfig{CPUs: -1}}}, "Tree"},
		{"not a mount", Config{Target: mount}, "Dir"},
		{"more readers than threads", Config{Target: tiny, Readers: limit + 1}, "Readers"},
		{"more devices than the sim holds", Config{Target: tiny, Count: MaxSimDevices + 1}, "Count"},
	} {
		_, err := Run(context.Background(), c.cfg)
		var ce *setting.Error
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: got %v, want a ConfigError on %s", c.name, err, c.field)
		}
	}
	if _, err := Run(context.Background(), Config{Target: targets.Target{Kind: targets.TargetKernfsim}}); !errors.Is(err, serverproc.ErrNoServer) {
		t.Errorf("no server: got %v, want ErrNoServer", err)
	}
}

// An interrupted storm returns what it measured.
func TestTeardownInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := simTeardown(5000, 1, 0)
	cfg.GPs = []kernfsim.GPPolicy{kernfsim.GPNormal}
	cfg.Progress = func(p Progress) {
		if p.Phase == "remove" && p.Done > 0 {
			cancel()
		}
	}
	res, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) || !res.Interrupted || len(res.Runs) != 1 {
		t.Fatalf("got %v, interrupted %v, %d runs", err, res.Interrupted, len(res.Runs))
	}
	if r := res.Runs[0]; r.Removed == 0 || r.Removed == r.Count {
		t.Errorf("removed %d of %d, want some", r.Removed, r.Count)
	}
}

// The JSON document has one run object per (lock, gp) with the
// documented fields; the table and benchmark lines have a row per run.
func TestTeardownReporters(t *testing.T) {
	res, err := Run(context.Background(), simTeardown(10, 1, 1, "rcu", "mutex"))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, res))
	var doc struct {
		Schema string           `json:"schema"`
		Runs   []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil || doc.Schema != Schema || len(doc.Runs) != 4 {
		t.Fatalf("schema %q, %d runs, %v:\n%s", doc.Schema, len(doc.Runs), err, buf.String())
	}
	for _, r := range doc.Runs {
		for _, f := range []string{"lock", "gp", "count", "completed", "total_ns", "caller_mean_ns", "caller_p99_ns", "until_complete_ns", "readers"} {
			if _, ok := r[f]; !ok {
				t.Errorf("run %v has no %q", r, f)
			}
		}
	}
	buf.Reset()
	Write(&buf, res)
	if out := buf.String(); strings.Count(out, "\nrcu ") != 3 || !strings.Contains(out, "\nmutex  n/a") || !strings.Contains(out, "reference: seed 000") {
		t.Errorf("table:\n%s", out)
	}
	buf.Reset()
	WriteBench(&buf, res)
	if out := buf.String(); strings.Count(out, "BenchmarkTeardown/target=sim/lock=") != 4 || !strings.Contains(out, "gp=na/") {
		t.Errorf("bench:\n%s", out)
	}
}
