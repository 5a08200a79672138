package tests

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/loadgen/soak"
)

// soakEnv sets TestSoak's duration: scripts/test.sh runs it for 60s (CI);
// a plain go test runs it for defaultSoak: 2 s per lock mode, the least
// loadgen soak accepts, so that a new strategy does not make it too short.
const soakEnv = "KERNFSIM_SOAK"

var defaultSoak = time.Duration(len(soak.DefaultLocks)) * 2 * time.Second

var (
	soakLine  = regexp.MustCompile(`(?m)^soak lock=([\w-]+) t=\d+s( warm-up)? ops/s=\d+ p99=\S+ errors=\S+ rss=[\d.]+MiB goroutines=\d+ threads=\d+ nodeids=\d+ changes=\d+ storms=\d+$`)
	soakBlock = regexp.MustCompile(`(?m)^soak lock=([\w-]+) done in .*\n  errors: .*\n  rss: .*\n  goroutines: .*\n  threads: .*\n  nodeids: .*\n  verdict: +ok$`)
)

// TestSoak runs loadgen soak (readers on every operation, device churn,
// teardown storms; every strategy of soak.DefaultLocks in turn, each on a kernfsim
// server of its own) for $KERNFSIM_SOAK (default 15s) and checks that it
// passes its three conditions in every mode: no unexpected errno; the
// server's goroutines at the end within 10% of their level after warm-up,
// and its RSS within 10% or 16 MiB (the Go runtime's retention, see
// soak.Config.RSSSlack); the nodeid table back to its baseline
// after drop_caches.
func TestSoak(t *testing.T) {
	testkit.RequireFUSE(t)
	d := defaultSoak
	if v := os.Getenv(soakEnv); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("%s=%q: %v", soakEnv, v, err)
		}
	}
	interval := max(d/12, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	lg := loadgenCmd(ctx, t, "soak", "--duration", d.String(), "--interval", interval.String(),
		"--cpus", "8", "--sockets", "1", "--mem-blocks", "16")
	var stdout, stderr strings.Builder
	lg.Stdout, lg.Stderr = &stdout, &stderr
	err := lg.Run()
	out := stdout.String()
	t.Logf("loadgen soak --duration %v:\n%s", d, out)
	if ctx.Err() != nil {
		t.Fatalf("loadgen soak still running %v after it should have ended", 2*time.Minute)
	}
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("loadgen soak: %v; stderr:\n%s", err, stderr.String())
	}
	for _, lock := range soak.DefaultLocks {
		if !containsSubmatch(soakLine, out, lock) {
			t.Errorf("no periodic line for lock=%s", lock)
		}
		if !containsSubmatch(soakBlock, out, lock) {
			t.Errorf("no passing verdict for lock=%s", lock)
		}
	}
	if !strings.HasPrefix(out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:], "soak: ok ("+strings.Join(soak.DefaultLocks, ", ")+")") {
		t.Errorf("the last line is not the soak's verdict")
	}
}

// containsSubmatch reports whether re matches in s with its first group
// equal to want.
func containsSubmatch(re *regexp.Regexp, s, want string) bool {
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if m[1] == want {
			return true
		}
	}
	return false
}
