package serverproc

import (
	"strings"
	"syscall"
	"testing"

	"github.com/kernfsim/kernfsim/loadgen/errtally"
)

// TestServerGone checks the error Run and Soak give for a mount whose
// server went away: it says what happened and how to recover.
func TestServerGone(t *testing.T) {
	tally := errtally.ErrorTally{}
	tally.Add(syscall.ENOTCONN, false, "/mnt/k/a", 3)
	err := NewServerGoneError("/mnt/k", tally)
	for _, w := range []string{"/mnt/k", "went away", "3 operations", "kernfsim mount /mnt/k --force", "umount -l /mnt/k"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}
