package fusefs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// mountTest mounts tr on a fresh temporary directory and unmounts it when
// the test ends, failing it if any FUSE POLL reached the server.
func mountTest(t testing.TB, tr *kernfsim.Tree, opts MountOptions) *Mount {
	t.Helper()
	testkit.RequireFUSE(t)
	m, err := MountTree(tr, t.TempDir(), opts)
	require.NoError(t, err)
	if want := opts.Transport.Only; want != uring.Auto && m.Transport() != want {
		m.Unmount()
		t.Fatalf("mounted over %s, want %s (fell back: %v)", m.Transport(), want, m.FellBack())
	}
	t.Cleanup(func() {
		// A POLL after the prime could have deadlocked this test binary.
		if n := m.Server.PollsAfterPrime(); n != 0 {
			t.Errorf("%d FUSE POLL requests reached the server after the mount's prime", n)
		}
		assert.NoError(t, m.Unmount())
	})
	return m
}
