package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestStats checks `kernfsim stats MNT`: on a mount it prints the request
// counters (LOOKUP non-zero after a walk) in sections, each titled once,
// and exits 0; on a directory that is not a kernfsim mount it exits 2.
func TestStats(t *testing.T) {
	for _, lock := range allLocks {
		t.Run("lock="+lock, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, newMountpoint(t), append([]string{"--lock", lock}, smallTree...)...)
			testkit.Must(os.Stat(filepath.Join(s.mnt, "devices/system/cpu/cpu0/topology/core_id")))(t)
			r := runKernfsim(t, "stats", s.mnt)
			if r.code != 0 {
				t.Fatalf("exit status: got %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			if got := statsValue(r.stdout, "lock"); got != lock {
				t.Errorf("lock: got %q, want %q\n%s", got, lock, r.stdout)
			}
			if n, err := strconv.ParseUint(statsValue(r.stdout, "LOOKUP"), 10, 64); err != nil || n == 0 {
				t.Errorf("LOOKUP: got %q, want a non-zero count\n%s", statsValue(r.stdout, "LOOKUP"), r.stdout)
			}
			titles := map[string]int{}
			for _, line := range strings.Split(r.stdout, "\n") {
				if line != "" && !strings.HasPrefix(line, " ") {
					titles[line]++
				}
			}
			for title, n := range titles {
				if n != 1 {
					t.Errorf("section %q: got %d titles, want 1\n%s", title, n, r.stdout)
				}
			}
		})
	}
	t.Run("json and watch", func(t *testing.T) {
		s := startServer(t, newMountpoint(t), smallTree...)
		os.ReadFile(filepath.Join(s.mnt, "devices/system/cpu/cpu0/topology/core_id"))
		r := runKernfsim(t, "stats", s.mnt, "--json")
		var doc struct {
			Counters map[string]any `json:"counters"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil || doc.Counters["server.lock"] != "rwsem" {
			t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
		}
		if n, _ := doc.Counters["requests.LOOKUP"].(float64); n == 0 {
			t.Errorf("requests.LOOKUP %v, want > 0", doc.Counters["requests.LOOKUP"])
		}
		// --watch runs until interrupted, a JSON line per interval, and
		// ends with exit 0 on SIGTERM.
		lines, code := watchStats(t, s.mnt, 2)
		if code != 0 || len(lines) < 2 || !strings.Contains(lines[0], `"per_second":{`) {
			t.Errorf("--watch: exit %d, %d lines:\n%s", code, len(lines), strings.Join(lines, "\n"))
		}
	})
	t.Run("not a mount", func(t *testing.T) {
		r := runKernfsim(t, "stats", t.TempDir())
		if r.code != 2 || !strings.Contains(r.stderr, "not a kernfsim mount") {
			t.Errorf("got exit %d, stderr %q; want exit 2 and \"not a kernfsim mount\"", r.code, r.stderr)
		}
	})
}

// statsValue returns the value printed for key, "" when there is none.
func statsValue(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			return f[1]
		}
	}
	return ""
}

// watchStats runs kernfsim stats --watch 100ms --json on mnt until it has
// printed n lines, then sends it SIGTERM, and returns every line it
// printed and its exit status. It waits for the lines, not for a time, so
// a slow start on a busy machine only makes it take longer; past
// statusDeadline it fails the test.
func watchStats(t *testing.T, mnt string, n int) ([]string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), statusDeadline)
	defer cancel()
	cmd := kernfsimCmd(ctx, "stats", mnt, "--watch", "100ms", "--json")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var lines []string
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if lines = append(lines, sc.Text()); len(lines) == n {
			cmd.Process.Signal(syscall.SIGTERM) // it prints on until it sees the signal
		}
	}
	cmd.Wait() // an exit status other than 0 is the caller's to report
	if ctx.Err() != nil {
		t.Fatalf("kernfsim stats --watch: %d lines in %v, want %d", len(lines), statusDeadline, n)
	}
	return lines, cmd.ProcessState.ExitCode()
}
