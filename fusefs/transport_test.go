package fusefs

import (
	"testing"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/fusetest"
)

// testTransports are the transports every end-to-end test runs on:
// /dev/fuse always, io_uring where fusetest.URing says so.
func testTransports(t testing.TB) []uring.Kind {
	t.Helper()
	if fusetest.URing(t) {
		return []uring.Kind{uring.DevFuse, uring.URing}
	}
	return []uring.Kind{uring.DevFuse}
}

// forEachTransport runs f as a subtest per transport.
func forEachTransport(t *testing.T, f func(t *testing.T, tp uring.Kind)) {
	for _, tp := range testTransports(t) {
		t.Run("transport="+string(tp), func(t *testing.T) { f(t, tp) })
	}
}
