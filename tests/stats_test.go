package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStats checks `kernfsim stats MNT`: on a mount it prints the request
// counters (LOOKUP non-zero after a walk) in sections, each titled once,
// and exits 0; on a directory that is not a kernfsim mount it exits 2.
func TestStats(t *testing.T) {
	for _, lock := range allLocks {
		t.Run("lock="+lock, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, newMountpoint(t), append([]string{"--lock", lock}, smallTree...)...)
			if _, err := os.Stat(filepath.Join(s.mnt, "devices/system/cpu/cpu0/topology/core_id")); err != nil {
				t.Fatal(err)
			}
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
		// --watch runs until interrupted (here: SIGTERM from the 350 ms
		// context), a JSON line per interval, and ends with exit 0.
		ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
		defer cancel()
		cmd := kernfsimCmd(ctx, "stats", s.mnt, "--watch", "100ms", "--json")
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		out, _ := cmd.Output() // ctx's error: it ran until cancelled
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if code := cmd.ProcessState.ExitCode(); code != 0 || len(lines) < 2 || !strings.Contains(lines[0], `"per_second":{`) {
			t.Errorf("--watch: exit %d, %d lines:\n%s", code, len(lines), out)
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
