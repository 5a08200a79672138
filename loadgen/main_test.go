package loadgen

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kernfsim/kernfsim/loadgen/internal/testproc"
)

// The test binary doubles as the processes the tests start: those of
// testproc.Main, and
//
//	TEST_BINARY __worker    a --procs worker (ServeWorker)
func TestMain(m *testing.M) {
	testproc.Main(m, map[string]testproc.Proc{"__worker": serveWorker})
}

// serveWorker is a worker process: ServeWorker on this process's
// standard input and output and file descriptor 3.
func serveWorker(ctx context.Context, _ []string) int {
	start := os.NewFile(3, "start")
	if err := ServeWorker(ctx, os.Stdin, os.Stdout, start); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
