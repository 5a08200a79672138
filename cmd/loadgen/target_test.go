package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen/report"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
)

// smallTree keeps the server's start-up short.
var smallTree = []string{"--cpus", "8", "--mem-blocks", "4"}

// The default target starts a kernfsim server in a separate process,
// measures through its mount and leaves nothing behind.
func TestDefaultTarget(t *testing.T) {
	requireFUSE(t)
	for _, op := range []string{"open-read-close", "stat", "readdir", "walk", "hwloc"} {
		t.Run(op, func(t *testing.T) {
			times, tree := 100, smallTree
			if op == "hwloc" {
				times, tree = 1, []string{"--cpus", "2", "--sockets", "1", "--mem-blocks", "4"}
			}
			code, out, errOut := runArgs(context.Background(), append([]string{"--threads", "2", "--times", strconv.Itoa(times),
				"--lock", "rcu", "--op", op}, tree...)...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			rest := checkSeed(t, out, times, 2)
			if !strings.Contains(rest, "target:       kernfsim: FUSE mount at ") ||
				!strings.Contains(rest, "lock rcu") || !strings.Contains(rest, "errors:       none") ||
				!setupLine.MatchString(rest) {
				t.Errorf("summary:\n%s", rest)
			}
			// The server's lock counters, read from its stats file around
			// the phase: each of the 2 x times operations entered the read side.
			if m := lockLine.FindStringSubmatch(rest); m == nil || atoi(t, m[1]) < 2*times {
				t.Errorf("summary lacks a lock line with at least %d read acquisitions:\n%s", 2*times, rest)
			}
			noLeftovers(t)
		})
	}
}

var lockLine = regexp.MustCompile(`(?m)^lock:         concur read (\d+) acquisitions .*; hold times sampled 1 in 64$`)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// setupLine is the setup of a default server: io_uring where the kernel
// offers it (auto), /dev/fuse otherwise.
var setupLine = regexp.MustCompile(`setup:        kernfsim lock=rcu gp=normal tick=4ms transport=(devfuse|uring) permissions=server entry-timeout=0s attr-timeout=0s negative-timeout=1h0m0s negatives=lock:cached\n`)

// Churn through the mount's bus/kernfsim files: only the expected errnos.
func TestDefaultTargetChurn(t *testing.T) {
	requireFUSE(t)
	code, out, errOut := runArgs(context.Background(), append([]string{"--threads", "2", "--times", "300", "--churn", "1000",
		"--format", "json"}, smallTree...)...)
	var j report.JSONRun
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if j.Churn == nil || j.Churn.Adds == 0 || j.Unexpected != 0 {
		t.Errorf("churn %+v, unexpected %d", j.Churn, j.Unexpected)
	}
	for _, e := range j.Errors {
		if !e.Expected || (e.Errno != "ENOENT" && e.Errno != "ENODEV") {
			t.Errorf("unexpected error %+v", e)
		}
	}
	noLeftovers(t)
}

func TestProcsDefaultTarget(t *testing.T) {
	requireFUSE(t)
	code, out, errOut := runArgs(context.Background(), append([]string{"--procs", "--threads", "2", "--times", "100", "--missing"}, smallTree...)...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	checkSeed(t, out, 100, 2)
	noLeftovers(t)
}

// Interrupted (Ctrl-C): the partial results are printed, the exit status
// is 1, and the mount and its directory are gone.
func TestDefaultTargetInterrupted(t *testing.T) {
	requireFUSE(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		waitForWorkload(ctx, 100)
	}()
	code, out, errOut := runArgs(ctx, append([]string{"--threads", "2", "--times", "100000000"}, smallTree...)...)
	if code != cli.ExitRuntime || !strings.Contains(errOut, "interrupted") {
		t.Errorf("exit %d, stderr %q: want 1 and interrupted", code, errOut)
	}
	if !singleLine.MatchString(strings.SplitN(out, "\n", 2)[0]) || !strings.Contains(out, "interrupted:  partial results") {
		t.Errorf("partial output lacks the interrupted line:\n%s", out)
	}
	noLeftovers(t)
}

func TestDefaultTargetUnavailable(t *testing.T) {
	defer func(s func(context.Context, []string, io.Writer, io.Writer) int) { serveMain = s }(serveMain)
	serveMain = nil
	code, _, errOut := runArgs(context.Background(), "--threads", "1", "--times", "10")
	if code != cli.ExitRuntime || !strings.Contains(errOut, "kernfsim server not available yet") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runArgs(context.Background(), "compare", "--targets", "kernfsim")
	if code != cli.ExitRuntime || !strings.Contains(errOut, "kernfsim server not available yet") {
		t.Errorf("compare --targets kernfsim: exit %d, stderr %q", code, errOut)
	}
}

var compareArgs = []string{"compare", "--sim", "--locks", "mutex,rcu", "--threads", "1,2",
	"--times", "20", "--sim-times", "50", "--repeats", "1", "--cpus", "8", "--mem-blocks", "4"}

func TestCompareGolden(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "c.svg")
	code, out, errOut := runArgs(context.Background(), append(compareArgs, "--plot", svg)...)
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "compare_sim.golden", out)
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), "<svg") {
		t.Errorf("plot: %v, %.100q", err, data)
	}
}

// compare --writers: the table gets the writers' line, the lock cells
// their write acquisitions, and a writers table per op.
func TestCompareWritersGolden(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), append(compareArgs, "--ops", "files", "--writers", "1", "--write-rate", "2000", "--min-duration", "50ms")...)
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "compare_sim_writers.golden", out)
}

func TestCompareFormats(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), append(compareArgs, "--format", "json")...)
	var j report.JSONCompare
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &j) != nil || len(j.Cells) != 2*2*2 || j.Schema != report.SchemaCompare {
		t.Errorf("json: exit %d, stderr %q, %d cells", code, errOut, len(j.Cells))
	}
	code, out, _ = runArgs(context.Background(), append(compareArgs, "--format", "bench")...)
	if n := strings.Count(out, "\nBenchmarkSysfs/target=sim/lock="); code != cli.ExitOK || n != 8 {
		t.Errorf("bench: exit %d, %d lines, want 8:\n%s", code, n, out)
	}
	golden(t, "compare_sim_bench.golden", out)
}

// With the real /sys and a kernfsim server: every row kind.
func TestCompareAllTargets(t *testing.T) {
	requireFUSE(t)
	code, out, errOut := runArgs(context.Background(), append([]string{"compare", "--locks", "rwsem", "--threads", "2", "--times", "20",
		"--sim-times", "50", "--repeats", "1", "--ops", "files"}, smallTree...)...)
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, row := range []string{"\nkernfsim   rwsem", "\nsim        rwsem", "\nsys        host"} {
		if !strings.Contains(out, row) {
			t.Errorf("table lacks row %q:\n%s", row, out)
		}
	}
	noLeftovers(t)
}

// A mount whose server died: exit 2, saying the server is gone and how to
// recover.
func TestDeadMount(t *testing.T) {
	requireFUSE(t)
	s, err := serverproc.StartServer(context.Background(), serverproc.ServerConfig{Command: serverCommand(), Args: smallTree})
	require.NoError(t, err)
	defer s.Close()
	pid := serverPid(t, s.Mountpoint())
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	// The kernel ends the connection once the process is gone: poll for
	// that, with a deadline, rather than give up after a fixed wait.
	require.Eventually(t, func() bool {
		_, err := os.Stat(s.Mountpoint())
		return errors.Is(err, syscall.ENOTCONN)
	}, 10*time.Second, 10*time.Millisecond, "stat %s: no ENOTCONN 10 s after its server was killed", s.Mountpoint())
	code, _, errOut := runArgs(context.Background(), "--path", s.Mountpoint(), "--threads", "1", "--times", "10")
	if code != cli.ExitUsage || !strings.Contains(errOut, "transport endpoint is not connected") || !strings.Contains(errOut, "umount -l") {
		t.Errorf("exit %d, stderr %q: want 2, the dead server and how to recover", code, errOut)
	}
}

// serverPid finds the server process serving mnt: the __serve child
// whose command line names it.
func serverPid(t *testing.T, mnt string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmd, _ := os.ReadFile(p)
		if strings.Contains(string(cmd), "__serve\x00"+mnt+"\x00") {
			pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
			return pid
		}
	}
	t.Fatalf("no server process for %s", mnt)
	return 0
}

// A comparison saved as JSON is redrawn by loadgen plot in the format its
// -o extension names.
func TestPlotSaved(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "c.json")
	if code, _, errOut := runArgs(context.Background(), append(compareArgs, "--format", "json", "--out", saved)...); code != cli.ExitOK {
		t.Fatalf("compare: exit %d, %s", code, errOut)
	}
	for ext, magic := range map[string]string{"svg": "<?xml", "png": "\x89PNG", "pdf": "%PDF"} {
		out := filepath.Join(dir, "c."+ext)
		code, _, errOut := runArgs(context.Background(), "plot", saved, "-o", out)
		data, _ := os.ReadFile(out)
		if code != cli.ExitOK || !strings.HasPrefix(string(data), magic) {
			t.Errorf("%s: exit %d, stderr %q, starts %.8q", ext, code, errOut, data)
		}
	}
	run := filepath.Join(dir, "run.json")
	runArgs(context.Background(), append(smallSim, "--format", "json", "--out", run)...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", saved, "-o", filepath.Join(dir, "c.jpg")}, "the extension names the format: .svg, .png, .pdf"},
		{[]string{"plot", saved}, "-o FILE is missing"},
		{[]string{"plot", run, "-o", filepath.Join(dir, "r.svg")}, "a single run"},
		{[]string{"plot", filepath.Join(dir, "nope.json"), "-o", filepath.Join(dir, "n.svg")}, "no such file"},
		{[]string{"plot"}, "plot takes one RESULT.json"},
		{append(append([]string{}, compareArgs...), "--plot", filepath.Join(dir, "c.gif")), "--plot"},
	} {
		if code, _, errOut := runArgs(context.Background(), tc.args...); code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c.jpg")); err == nil {
		t.Error("a plot with an unknown extension was created")
	}
}

// waitForWorkload returns once the kernfsim server a run started has
// served more than n OPENs besides the polls' own (the run's phase is
// under way, past its set-up), or after a minute, or when ctx is done.
func waitForWorkload(ctx context.Context, n uint64) {
	deadline := time.Now().Add(time.Minute)
	for polls := uint64(0); ctx.Err() == nil && time.Now().Before(deadline); polls++ {
		mnts, _ := filepath.Glob(filepath.Join(os.TempDir(), "loadgen-kernfsim-*"))
		if len(mnts) > 0 {
			if s, err := client.ReadStats(mnts[0]); err == nil && s.Requests["OPEN"] > polls+n {
				return
			}
		}
		time.Sleep(5 * time.Millisecond) // polled, with a deadline
	}
}
