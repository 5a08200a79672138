package tests

import (
	"strings"
	"testing"
)

// TestStatusLineSaysTheNegativeRule: the server's status line says how
// it answers missing names, which by default the lock decides and which
// --negative-timeout overrides.
func TestStatusLineSaysTheNegativeRule(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lock", "mutex"}, " negative-timeout=0s negatives=lock:uncached "},
		{[]string{"--lock", "rwsem"}, " negative-timeout=1h0m0s negatives=lock:cached "},
		{[]string{"--lock", "rcu"}, " negative-timeout=1h0m0s negatives=lock:cached "},
		{[]string{"--lock", "rwsem", "--negative-timeout", "0"}, " negative-timeout=0s negatives=override "},
		{[]string{"--lock", "mutex", "--negative-timeout", "30s"}, " negative-timeout=30s negatives=override "},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			s := startServer(t, newMountpoint(t), c.args...)
			if !strings.Contains(s.status, c.want) {
				t.Errorf("status line %q: want it to contain %q", s.status, c.want)
			}
		})
	}
}
