package harness

import (
	"strings"
	"syscall"
	"testing"
)

// TestServerGone checks the error Run and Soak give for a mount whose
// server went away: it says what happened and how to recover.
func TestServerGone(t *testing.T) {
	err := NewServerGoneError("/mnt/k", ErrorTally{{syscall.ENOTCONN, false}: {Count: 3}})
	for _, w := range []string{"/mnt/k", "went away", "3 operations", "kernfsim mount /mnt/k --force", "umount -l /mnt/k"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}
