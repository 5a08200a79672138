package fusefs

import (
	"os"
	"testing"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// testTransports are the transports every end-to-end test runs on:
// /dev/fuse always, io_uring where the kernel allows it. Under CI, a
// kernel that has FUSE-over-io_uring but has it switched off fails the
// test: .ci/run switches it on, so the io_uring rows must run there.
func testTransports(t testing.TB) []Transport {
	t.Helper()
	err := uringUnavailable()
	switch {
	case err == nil:
		return []Transport{TransportDevFuse, TransportURing}
	case os.Getenv("CI") != "" && fileExists(uring.EnableParam):
		t.Fatalf("io_uring transport not testable under CI: %v", err)
	}
	t.Logf("testing /dev/fuse only: %v", err)
	return []Transport{TransportDevFuse}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// forEachTransport runs f as a subtest per transport.
func forEachTransport(t *testing.T, f func(t *testing.T, tp Transport)) {
	for _, tp := range testTransports(t) {
		t.Run("transport="+string(tp), func(t *testing.T) { f(t, tp) })
	}
}
