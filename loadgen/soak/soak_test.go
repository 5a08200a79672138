package soak

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

func TestSoakCheck(t *testing.T) {
	lv := func(rss, g int64) ServerLevel { return ServerLevel{RSS: rss << 20, Goroutines: g} }
	ok := Mode{Warm: lv(100, 10), End: lv(110, 11), Baseline: 4, Forgot: 4, Tolerance: 0.10,
		Errors: []errtally.ErrorCount{{Errno: syscall.ENOENT, Churn: true, Count: 7}, {Errno: syscall.ENODEV, Churn: true, Count: 1}}}
	tests := []struct {
		name string
		edit func(m *Mode)
		want []string // one per failure, in order
	}{
		{"ok at the limit", func(*Mode) {}, nil},
		{"levels fell", func(m *Mode) { m.End = lv(50, 5) }, nil},
		{"unexpected errno", func(m *Mode) {
			m.Errors = append(m.Errors, errtally.ErrorCount{Errno: syscall.EIO, Count: 2, Path: "x/uevent"},
				errtally.ErrorCount{Errno: syscall.ENOENT, Count: 1, Path: "y"}) // ENOENT off a churned device
		}, []string{"3 unexpected errors (EIO x2 on x/uevent; ENOENT x1 on y)"}},
		{"RSS grew", func(m *Mode) { m.End.RSS = 111 << 20 }, []string{"server RSS grew 11.0% after warm-up (100.0 MiB, then 111.0 MiB at the end; at most +10% allowed)"}},
		{"RSS within the slack", func(m *Mode) { m.End.RSS, m.RSSSlack = 116<<20, 16<<20 }, nil},
		{"RSS past the slack", func(m *Mode) { m.End.RSS, m.RSSSlack = 117<<20, 16<<20 }, []string{"server RSS grew 17.0% after warm-up (100.0 MiB, then 117.0 MiB at the end; at most +10% or +16.0 MiB allowed)"}},
		{"goroutines within the slack", func(m *Mode) { m.End.Goroutines = 14 }, nil},
		{"goroutines grew", func(m *Mode) { m.End.Goroutines = 15 }, []string{"server goroutines grew 50.0% after warm-up (10, then 15"}},
		{"nodeids", func(m *Mode) { m.Forgot = 9 }, []string{"nodeid table not back to baseline after drop_caches (9 nodeids, baseline 4)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := ok
			m.Errors = append([]errtally.ErrorCount(nil), ok.Errors...)
			tt.edit(&m)
			got := m.check()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d failures %q, want %d %q", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("failure %d: got %q, want it to begin %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSoakConfigErrors(t *testing.T) {
	srv := &serverproc.ServerConfig{Command: []string{"true"}}
	limit, _ := limits.ThreadLimit()
	tests := []struct {
		name  string
		c     Config
		field string
	}{
		{"too short", Config{Duration: 5 * time.Second, Server: srv}, "Duration"},
		{"negative", Config{Duration: time.Minute, Interval: -1, Server: srv}, "Duration"},
		{"warm-up too long", Config{Duration: 30 * time.Second, Warmup: 10 * time.Second, Server: srv}, "Warmup"},
		{"lock", Config{Duration: time.Minute, Locks: []string{"spin"}, Server: srv}, "Lock"},
		{"reader", Config{Duration: time.Minute, Readers: []string{"hwloc"}, Server: srv}, "Op"},
		{"storm", Config{Duration: time.Minute, StormSize: 1000, Server: srv}, "StormSize"},
		{"dir without its server", Config{Duration: time.Minute, Dir: "/tmp"}, "ServerPID"},
		{"more readers than threads", Config{PerOp: limit, Server: srv}, "PerOp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.c)
			var ce *setting.Error
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Errorf("got %v, want a *ConfigError for %s", err, tt.field)
			}
		})
	}
	if _, err := Run(context.Background(), Config{Duration: time.Minute}); !errors.Is(err, serverproc.ErrNoServer) {
		t.Errorf("no server and no Dir: got %v, want ErrNoServer", err)
	}
}

func TestWriteSoak(t *testing.T) {
	var b bytes.Buffer
	s := Sample{Lock: "rcu", Elapsed: 10 * time.Second, Warmup: true, OpsPerSec: 4123.4, P99: 150 * time.Microsecond,
		Errors: []errtally.ErrorCount{{Errno: syscall.EIO, Count: 2}, {Errno: syscall.ENOENT, Churn: true, Count: 5}},
		Server: ServerLevel{RSS: 25 << 20, Goroutines: 9, Threads: 12, Nodeids: 40}, Changes: 1000, Storms: 4}
	require.NoError(t, WriteSample(&b, s))
	want := "soak lock=rcu t=10s warm-up ops/s=4123 p99=150us errors=EIO:2,ENOENT:5(expected) rss=25.0MiB goroutines=9 threads=12 nodeids=40 changes=1000 storms=4\n"
	if b.String() != want {
		t.Errorf("sample line:\ngot  %q\nwant %q", b.String(), want)
	}
	b.Reset()
	m := Mode{Lock: "rcu", Warm: ServerLevel{RSS: 20 << 20, Goroutines: 7}, End: ServerLevel{RSS: 24 << 20, Goroutines: 7},
		Baseline: 4, Forgot: 4, Tolerance: 0.10, RSSSlack: 2 << 20}
	m.Failures = m.check()
	WriteMode(&b, m)
	WriteSummary(&b, Result{Modes: []Mode{m}})
	for _, w := range []string{"rss:         20.0 MiB after warm-up, 24.0 MiB at the end (+20.0%; at most +10% or +2.0 MiB)", "FAILED:      server RSS grew 20.0%",
		"soak: FAILED: lock=rcu: server RSS grew 20.0%"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("mode report lacks %q:\n%s", w, b.String())
		}
	}
}

// TestSoakMount soaks a kernfsim tree this process serves over FUSE
// (Config.Dir), briefly: every reader, churn and storms run, samples
// come, and the nodeid table returns to its baseline after drop_caches.
// RSS and goroutines are this test process's (client and server), so
// their tolerance is wide here; tests/soak_test.go checks them on a
// real server.
func TestSoakMount(t *testing.T) {
	testkit.RequireFUSE(t)
	strategy, err := locking.New("rcu", locking.Options{})
	require.NoError(t, err)
	tr := kernfsim.New(strategy, kernfsim.Options{GP: kernfsim.GPNormal})
	require.NoError(t, sysfs.BuildSynthetic(tr, sysfs.SynthConfig{CPUs: 4, Sockets: 1, MemBlocks: 4}.WithDefaults()))
	stats := fusefs.NewStatsFile(tr)
	_, err = sysfs.AddABI(tr, stats)
	require.NoError(t, err)
	tr.Seal()
	m, err := fusefs.MountTree(tr, t.TempDir(), fusefs.MountOptions{Stats: stats})
	require.NoError(t, err)
	defer m.Unmount()
	var samples []Sample
	c := Config{Dir: m.Mountpoint, ServerPID: os.Getpid(), Workers: loadgen.Workers, Duration: 3 * time.Second, Interval: 500 * time.Millisecond,
		StormEvery: 200 * time.Millisecond, StormSize: 8, Churn: 200, Tolerance: 10,
		OnSample: func(s Sample) { samples = append(samples, s) }}
	res, err := Run(t.Context(), c)
	require.NoError(t, err)
	if f := res.Failures(); len(f) > 0 {
		t.Errorf("failures: %q", f)
	}
	md := res.Modes[0]
	if md.Lock != "rcu" || md.Ops == 0 || md.Changes == 0 || md.Storms == 0 || md.Baseline <= 0 {
		t.Errorf("mode: got lock %q, %d ops, %d changes, %d storms, baseline %d nodeids; want rcu and all positive", md.Lock, md.Ops, md.Changes, md.Storms, md.Baseline)
	}
	if len(samples) < 4 || samples[0].Server.RSS == 0 || samples[0].Server.Goroutines == 0 {
		t.Errorf("got %d samples (first %+v), want at least 4 with RSS and goroutines", len(samples), samples)
	}
	var b bytes.Buffer
	WriteSample(&b, samples[len(samples)-1])
	if !regexp.MustCompile(`^soak lock=rcu t=\d+s ops/s=\d+ p99=\S+ errors=\S+ rss=[\d.]+MiB goroutines=\d+ threads=\d+ nodeids=\d+ changes=\d+ storms=\d+\n$`).Match(b.Bytes()) {
		t.Errorf("sample line %q", b.String())
	}
}
