package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestMountRefusesSmallAddressSpace runs kernfsim mount under ulimit -v
// 1000000 (976 MiB), where the queue threads cannot all start: it exits 2
// naming the limit, before mount(2), and leaves no mount. Issue 33: the
// runtime aborted with every goroutine's stack after mount(2) and left a
// dead mount. A -race binary cannot start under such a limit at all (the
// race detector maps terabytes), so the test builds a plain one then.
func TestMountRefusesSmallAddressSpace(t *testing.T) {
	testkit.RequireFUSE(t)
	bin := kernfsimBin
	if raceBuild {
		bin = filepath.Join(t.TempDir(), "kernfsim")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if b, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kernfsim/kernfsim/cmd/kernfsim").CombinedOutput(); err != nil {
			t.Fatalf("go build kernfsim without -race: %v\n%s", err, b)
		}
	}
	mnt := newMountpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `ulimit -v 1000000 && exec "$0" "$@"`, bin, "mount", mnt}, smallTree...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	mounted := isMounted(t, mnt)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("kernfsim mount under ulimit -v 1000000: still running after 30 s (mounted %v); stderr:\n%s", mounted, stderr.String())
	case !strings.Contains(stderr.String(), "kernfsim") && strings.Contains(stderr.String(), "runtime.main") && !mounted:
		t.Skipf("the Go runtime itself cannot start under ulimit -v 1000000 here: %.300s", stderr.String())
	}
	code := cmd.ProcessState.ExitCode()
	if code != 2 || mounted || stdout.Len() > 0 || !strings.Contains(stderr.String(), "address-space limit (RLIMIT_AS, ulimit -v)") || strings.Contains(stderr.String(), "goroutine ") {
		t.Errorf("kernfsim mount under ulimit -v 1000000: exit %d (%v), mounted %v, stdout %q; want exit 2, no mount, a message naming the address-space limit and no stacks; stderr:\n%.2000s",
			code, err, mounted, stdout.String(), stderr.String())
	}
}
