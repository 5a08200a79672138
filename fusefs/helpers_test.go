package fusefs

import (
	"os"
	"testing"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// requireFUSE skips without /dev/fuse or root, but fails when CI is set:
// CI machines must run the FUSE tests.
func requireFUSE(t testing.TB) {
	t.Helper()
	_, err := os.Stat("/dev/fuse")
	switch {
	case err == nil && os.Geteuid() == 0:
		return
	case os.Getenv("CI") != "":
		t.Fatalf("FUSE tests need /dev/fuse and root under CI (stat /dev/fuse: %v, euid %d)", err, os.Geteuid())
	default:
		t.Skipf("no FUSE here (stat /dev/fuse: %v, euid %d)", err, os.Geteuid())
	}
}

// mountTest mounts tr on a fresh temporary directory and unmounts it when
// the test ends.
func mountTest(t testing.TB, tr *kernfsim.Tree, opts MountOptions) *Mount {
	t.Helper()
	requireFUSE(t)
	m, err := MountTree(tr, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return m
}
