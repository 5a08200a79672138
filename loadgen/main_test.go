package loadgen

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/require"
)

// The test binary doubles as the helper processes the tests start:
//
//	TEST_BINARY __worker                   a --procs worker (ServeWorker)
//	TEST_BINARY __fakeserve MNT --lock L   a stand-in for `kernfsim mount`: a
//	                                       go-fuse loopback of $LOADGEN_FAKE_SRC
//	                                       (default /sys) on MNT
//	TEST_BINARY __fail                     exits 3 with a message
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "__") {
		os.Exit(helperMain(os.Args[1], os.Args[2:]))
	}
	os.Exit(withPrivateTmp(m.Run))
}

// withPrivateTmp runs fn with TMPDIR set to a directory of its own, so
// that the leftover checks see only this binary's mountpoints.
func withPrivateTmp(fn func() int) int {
	dir, err := os.MkdirTemp("", "loadgen-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("TMPDIR", dir)
	code := fn()
	os.Remove(dir)
	return code
}

func helperMain(cmd string, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "__worker":
		start := os.NewFile(3, "start")
		if err := ServeWorker(ctx, os.Stdin, os.Stdout, start); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "__fakeserve":
		return fakeServe(ctx, args)
	}
	fmt.Fprintln(os.Stderr, "helper failed on purpose")
	return 3
}

// fakeServe mounts a loopback of $LOADGEN_FAKE_SRC on args[0] until ctx
// ends, as `kernfsim mount` would serve a tree.
func fakeServe(ctx context.Context, args []string) int {
	src := os.Getenv("LOADGEN_FAKE_SRC")
	if src == "" {
		src = "/sys"
	}
	root, err := fs.NewLoopbackRoot(src)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := fs.Mount(args[0], root, &fs.Options{MountOptions: fuse.MountOptions{DirectMount: true, FsName: "fakekernfsim"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("serving", args[0])
	<-ctx.Done()
	if err := srv.Unmount(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// self is this test binary run as a helper.
func self(t *testing.T, cmd string) []string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return []string{exe, cmd}
}

// requireSys skips t unless /sys has CPU directories.
func requireSys(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/topology/core_id"); err != nil {
		t.Skip("no /sys/devices/system/cpu/cpu0/topology/core_id:", err)
	}
}

// leftovers lists loadgen's temporary mountpoints still in the temporary
// directory or still mounted.
func leftovers(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "loadgen-kernfsim-*"))
	mi, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(mi), "\n") {
		if strings.Contains(line, filepath.Join(os.TempDir(), "loadgen-kernfsim-")) {
			dirs = append(dirs, "mounted: "+line)
		}
	}
	return dirs
}
