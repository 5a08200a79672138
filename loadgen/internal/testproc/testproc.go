// Package testproc lets a test binary double as the processes its tests start.
//
// Those are a stand-in kernfsim server and a worker. It checks what they
// leave behind. It is for the tests of loadgen and serverproc.
package testproc

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

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
)

// Proc is a process the test binary runs as: the arguments after its
// name, cancelled on SIGTERM and SIGINT; it returns the exit status.
type Proc func(ctx context.Context, args []string) int

// Main runs the test binary as procs[os.Args[1]] when that names one
// (anything else that begins with "__" exits 3 with a message, as a
// server that fails), else runs m with TMPDIR set to a directory of its
// own, so that Leftovers sees only this binary's mountpoints. Call it
// from TestMain. "__fakeserve" is FakeServe unless procs says otherwise.
//
//	TEST_BINARY __fakeserve MNT --lock L   a stand-in for `kernfsim mount`: a
//	                                       go-fuse loopback of $LOADGEN_FAKE_SRC
//	                                       (default /sys) on MNT
//	TEST_BINARY __fail                     exits 3 with a message
func Main(m *testing.M, procs map[string]Proc) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "__") {
		os.Exit(run(os.Args[1], os.Args[2:], procs))
	}
	os.Exit(withPrivateTmp(m.Run))
}

func run(name string, args []string, procs map[string]Proc) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if p, ok := procs[name]; ok {
		return p(ctx, args)
	}
	if name == "__fakeserve" {
		return FakeServe(ctx, args)
	}
	fmt.Fprintln(os.Stderr, "helper failed on purpose")
	return 3
}

// withPrivateTmp runs fn with TMPDIR set to a directory of its own.
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

// FakeServe mounts a loopback of $LOADGEN_FAKE_SRC on args[0] until ctx
// ends, as `kernfsim mount` would serve a tree.
func FakeServe(ctx context.Context, args []string) int {
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

// Self is the command line that runs this test binary as proc.
func Self(t *testing.T, proc string) []string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return []string{exe, proc}
}

// FakeServer is a server configuration that starts FakeServe; it skips
// t without FUSE or without /sys's CPU directories.
func FakeServer(t *testing.T) *serverproc.ServerConfig {
	t.Helper()
	testkit.RequireFUSE(t)
	RequireSys(t)
	return &serverproc.ServerConfig{Command: Self(t, "__fakeserve")}
}

// RequireSys skips t unless /sys has CPU directories.
func RequireSys(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/topology/core_id"); err != nil {
		t.Skip("no /sys/devices/system/cpu/cpu0/topology/core_id:", err)
	}
}

// Leftovers lists serverproc's temporary mountpoints still in the
// temporary directory or still mounted.
func Leftovers(t *testing.T) []string {
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
