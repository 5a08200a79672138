package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestSIGTERMDuringDeferredTeardowns deletes many devices under
// --gp deferred (each delete returns before its teardown) and sends
// SIGTERM at once: the server must complete every queued teardown before
// it unmounts, say how many, and exit 0.
func TestSIGTERMDuringDeferredTeardowns(t *testing.T) {
	testkit.RequireFUSE(t)
	mnt := newMountpoint(t)
	s := startServer(t, mnt, append([]string{"--lock", "rcu", "--gp", "deferred", "--gp-tick", "20ms"}, smallTree...)...)
	const n = 100
	ctl := func(file, data string) {
		require.NoError(t, os.WriteFile(filepath.Join(mnt, "bus/kernfsim", file), []byte(data), 0), "write %q to %s", data, file)
	}
	for i := range n {
		ctl("new_device", fmt.Sprintf("d%d", i))
	}
	for i := range n {
		ctl("delete_device", fmt.Sprintf("d%d", i))
	}
	s.stop(t)
	m := regexp.MustCompile(`after all (\d+) deferred teardowns completed \((\d+) teardowns in all\)`).FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no teardown count on exit; stderr:\n%s", s.stderr)
	}
	queued, _ := strconv.Atoi(m[1])
	completed, _ := strconv.Atoi(m[2])
	if queued != 2*n || completed != queued { // a device and its class link each
		t.Fatalf("got %d queued and %d completed teardowns, want %d and all completed", queued, completed, 2*n)
	}
}
