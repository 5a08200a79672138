package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
