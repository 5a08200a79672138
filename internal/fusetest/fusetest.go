// Package fusetest holds what tests that mount real FUSE filesystems share.
//
// Beside package testkit, it says whether to test FUSE-over-io_uring,
// and checks the mount table.
package fusetest

import (
	"os"
	"testing"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/mountinfo"
)

// IsMounted reports whether mnt is a mount point in this mount namespace.
func IsMounted(t testing.TB, mnt string) bool {
	t.Helper()
	mounted, err := mountinfo.IsMountpoint(mnt)
	if err != nil {
		t.Fatal(err)
	}
	return mounted
}

// URing reports whether tests should also run over FUSE-over-io_uring:
// uring.Available (the kernel allows it, and this is root). Under CI, a
// kernel that has it but has it switched off fails the test: .ci/run
// switches it on, so the io_uring rows must run there.
func URing(t testing.TB) bool {
	t.Helper()
	err := uring.Available()
	_, hasParam := os.Stat(uring.EnableParam)
	switch {
	case err == nil:
		return true
	case os.Getenv("CI") != "" && hasParam == nil:
		t.Fatalf("io_uring transport not testable under CI: %v", err)
	}
	t.Logf("testing /dev/fuse only: %v", err)
	return false
}
