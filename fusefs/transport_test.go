package fusefs

import (
	"testing"

	"github.com/kernfsim/kernfsim/internal/fusetest"
)

// testTransports are the transports every end-to-end test runs on:
// /dev/fuse always, io_uring where fusetest.URing says so.
func testTransports(t testing.TB) []TransportKind {
	t.Helper()
	if fusetest.URing(t) {
		return []TransportKind{TransportDevFuse, TransportURing}
	}
	return []TransportKind{TransportDevFuse}
}

// forEachTransport runs f as a subtest per transport.
func forEachTransport(t *testing.T, f func(t *testing.T, tp TransportKind)) {
	for _, tp := range testTransports(t) {
		t.Run("transport="+string(tp), func(t *testing.T) { f(t, tp) })
	}
}
