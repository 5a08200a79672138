// Package fusetest holds what tests that mount real FUSE filesystems
// share: the skip-or-fail rule and a mount-table check.
package fusetest

import (
	"os"
	"testing"

	"github.com/kernfsim/kernfsim/internal/mountinfo"
)

// RequireFUSE skips without /dev/fuse or root, but fails when the CI
// environment variable is set: CI machines must run the FUSE tests.
func RequireFUSE(t testing.TB) {
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

// IsMounted reports whether mnt is a mount point in this mount namespace.
func IsMounted(t testing.TB, mnt string) bool {
	t.Helper()
	mounted, err := mountinfo.IsMountpoint(mnt)
	if err != nil {
		t.Fatal(err)
	}
	return mounted
}
