package fusefs

import (
	"testing"

	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// writers lists the strategies that accept writers once the tree is
// sealed and served.
var writers = locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })

// mountTest mounts tr on a fresh temporary directory and unmounts it when
// the test ends, failing it if any FUSE POLL reached the server.
func mountTest(t testing.TB, tr *kernfsim.Tree, opts MountOptions) *Mount {
	t.Helper()
	fusetest.RequireFUSE(t)
	m, err := MountTree(tr, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Transport != "" && opts.Transport != TransportAuto && m.Transport != opts.Transport {
		m.Unmount()
		t.Fatalf("mounted over %s, want %s (fell back: %v)", m.Transport, opts.Transport, m.FellBack)
	}
	t.Cleanup(func() {
		// A POLL after the prime could have deadlocked this test binary.
		if n := m.Server.PollsAfterPrime(); n != 0 {
			t.Errorf("%d FUSE POLL requests reached the server after the mount's prime", n)
		}
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return m
}
