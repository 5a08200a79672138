package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

var (
	loadgenOnce sync.Once
	loadgenPath string
	loadgenErr  error
)

// loadgenBin builds cmd/loadgen once, beside the kernfsim binary (TestMain
// removes both), with -race when the tests run with it.
func loadgenBin(t testing.TB) string {
	t.Helper()
	loadgenOnce.Do(func() {
		loadgenPath = filepath.Join(filepath.Dir(kernfsimBin), "loadgen")
		loadgenErr = build(loadgenPath, "github.com/kernfsim/kernfsim/cmd/loadgen")
	})
	if loadgenErr != nil {
		t.Fatal(loadgenErr)
	}
	return loadgenPath
}

// loadgenCmd is the command loadgen args, with ctx's end sending SIGTERM.
func loadgenCmd(ctx context.Context, t testing.TB, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, loadgenBin(t), args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if raceBuild && os.Getenv("GORACE") == "" {
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	}
	return cmd
}

// TestServerKilledUnderLoad kills the server with SIGKILL while loadgen
// hammers its mount with 4 threads: clients get ENOTCONN; loadgen stops
// within seconds, says the server is gone and how to recover the
// mountpoint, and exits 1; kernfsim mount --force then serves it again.
// With kernel caches on, a stat of the root answers from the cache after
// the kill: the dead-server checks must not be fooled by it.
func TestServerKilledUnderLoad(t *testing.T) {
	testkit.RequireFUSE(t)
	for name, caches := range map[string][]string{"off": nil, "on": {"--attr-timeout", "30s", "--entry-timeout", "30s"}} {
		t.Run("caches="+name, func(t *testing.T) { testServerKilledUnderLoad(t, caches) })
	}
}

func testServerKilledUnderLoad(t *testing.T, caches []string) {
	mnt := newMountpoint(t)
	s := startServer(t, mnt, append(append([]string{}, caches...), smallTree...)...)
	const times = 4000 // per worker: the single phase, then 4 workers at once
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lg := loadgenCmd(ctx, t, "--path", mnt, "--threads", "4", "--times", strconv.Itoa(times))
	var stdout, stderr testkit.SyncBuffer
	lg.Stdout, lg.Stderr = &stdout, &stderr
	require.NoError(t, lg.Start())
	exited := make(chan error, 1)
	go func() { exited <- lg.Wait() }()
	awaitOpens(t, mnt, times+times/4, exited) // in the concur phase: 4 threads at once
	s.signal(t, syscall.SIGKILL)
	killed := time.Now()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("loadgen still runs 20 s after the server was killed; stderr:\n%s", stderr.String())
	}
	t.Logf("loadgen exited %v after the kill", time.Since(killed).Round(time.Millisecond))
	if code := lg.ProcessState.ExitCode(); code != 1 {
		t.Errorf("loadgen exit status: got %d, want 1", code)
	}
	for _, w := range []string{"went away", "kernfsim mount " + mnt + " --force", "umount -l " + mnt} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("loadgen's stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	if !regexp.MustCompile(`ENOTCONN|ECONNABORTED|ECANCELED`).MatchString(stdout.String()) {
		t.Errorf("loadgen's errors line counts no dead-connection errno (ENOTCONN, ECONNABORTED, ECANCELED):\n%s", stdout.String())
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); !kernfsim.Disconnected(err) {
		t.Errorf("statfs %s after the kill: got %v, want ENOTCONN, ECONNABORTED or ECANCELED", mnt, err)
	}
	s2 := startServer(t, mnt, append([]string{"--force"}, smallTree...)...)
	core := filepath.Join(mnt, "devices/system/cpu/cpu0/topology/core_id")
	if b, err := os.ReadFile(core); err != nil || string(b) != "0\n" {
		t.Errorf("read %s after --force: got %q, %v; want \"0\\n\"", core, b, err)
	}
	s2.stop(t)
}

// awaitOpens waits until the server at mnt has answered n OPEN requests,
// failing the test if loadgen exits first or it takes over a minute.
func awaitOpens(t *testing.T, mnt string, n int, exited <-chan error) {
	t.Helper()
	testkit.WaitFor(t, time.Minute, 20*time.Millisecond, func() error {
		select {
		case err := <-exited:
			t.Fatalf("loadgen exited (%v) before the server was killed", err)
		default:
		}
		if opens(t, mnt) < n {
			return fmt.Errorf("the server answered fewer than %d OPENs in a minute", n)
		}
		return nil
	})
}

// opens is the server's requests.OPEN counter.
func opens(t *testing.T, mnt string) int {
	f, err := os.Open(filepath.Join(mnt, "kernel/kernfsim/stats"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "requests.OPEN "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
