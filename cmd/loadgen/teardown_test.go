package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen/kernelprobe"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/teardown"
)

// smallTeardown is a quick storm on a small tree.
var smallTeardown = []string{"teardown", "--count", "30", "--cpus", "8", "--mem-blocks", "4"}

func TestTeardownSimGolden(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), append(smallTeardown, "--sim", "--locks", "rcu,mutex")...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "teardown_sim.golden", out)
	code, out, errOut = runArgs(context.Background(), append(smallTeardown, "--sim", "--readers", "1", "--gps", "deferred", "--format", "bench")...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "teardown_sim_bench.golden", out)
}

// teardownJSON runs a storm with --format json and decodes the runs as
// maps, to check the documented field names.
func teardownJSON(t *testing.T, args ...string) (doc struct {
	Schema string           `json:"schema"`
	Count  int              `json:"count"`
	Runs   []map[string]any `json:"runs"`
}) {
	t.Helper()
	code, out, errOut := runArgs(context.Background(), append(args, "--format", "json")...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != teardown.Schema {
		t.Fatalf("schema %q, %v:\n%s", doc.Schema, err, out)
	}
	return doc
}

// checkTeardownRuns checks each run object's documented fields and that every
// device's teardown completed.
func checkTeardownRuns(t *testing.T, runs []map[string]any, want []string, count int) {
	t.Helper()
	if len(runs) != len(want) {
		t.Fatalf("got %d runs, want %d", len(runs), len(want))
	}
	for i, r := range runs {
		if got := r["lock"].(string) + "/" + r["gp"].(string); got != want[i] {
			t.Errorf("run %d is %s, want %s", i, got, want[i])
		}
		for _, f := range []string{"count", "completed", "total_ns", "caller_mean_ns", "caller_p99_ns", "until_complete_ns"} {
			v, ok := r[f].(float64)
			if !ok || v <= 0 {
				t.Errorf("run %s: %s = %v, want a positive number", want[i], f, r[f])
			}
		}
		if r["count"] != float64(count) || r["completed"] != float64(count) {
			t.Errorf("run %s: count %v, completed %v, want %d", want[i], r["count"], r["completed"], count)
		}
	}
}

func TestTeardownSimJSON(t *testing.T) {
	doc := teardownJSON(t, append(smallTeardown, "--sim", "--gp-tick", "1ms", "--locks", "rcu,rwsem")...)
	checkTeardownRuns(t, doc.Runs, []string{"rcu/normal", "rcu/expedited", "rcu/deferred", "rwsem/n/a"}, 30)
}

// The default target starts a kernfsim server per policy and removes
// through its delete_device; the teardowns complete by the poll of its
// stats file.
func TestTeardownFUSE(t *testing.T) {
	requireFUSE(t)
	doc := teardownJSON(t, append(smallTeardown, "--gp-tick", "1ms", "--readers", "1")...)
	checkTeardownRuns(t, doc.Runs, []string{"rcu/normal", "rcu/expedited", "rcu/deferred"}, 30)
	noLeftovers(t)
}

// --path measures a mount as it is: the lock and policy come from its
// stats; devices an earlier storm left are removed first.
func TestTeardownPath(t *testing.T) {
	requireFUSE(t)
	srv, err := serverproc.StartServer(context.Background(), serverproc.ServerConfig{Command: serverCommand(), Lock: "rcu",
		Args: []string{"--gp=deferred", "--cpus=2", "--sockets=1", "--mem-blocks=4"}})
	require.NoError(t, err)
	defer srv.Close()
	ctl := filepath.Join(srv.Mountpoint(), "bus/kernfsim/new_device")
	require.NoError(t, os.WriteFile(ctl, []byte("lgtd3\n"), 0))
	doc := teardownJSON(t, "teardown", "--path", srv.Mountpoint(), "--count", "20")
	checkTeardownRuns(t, doc.Runs, []string{"rcu/deferred"}, 20)
	if ents, _ := os.ReadDir(filepath.Join(srv.Mountpoint(), "devices/kernfsim")); len(ents) != 0 {
		t.Errorf("left %d devices", len(ents))
	}
}

func TestTeardownBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--sim", "--locks", "none"},
		{"--sim", "--gps", "lazy"},
		{"--sim", "--path", "/tmp"},
		{"--path", "/tmp", "--gps", "normal"},
		{"--path", "/tmp"}, // not a kernfsim mount
		{"--sim", "--count", "0"},
		{"--sim", "--batch", "31"},
		{"--batch", "1000"}, // over one page to delete_device
		{"--sim", "--format", "csv"},
		{"--sim", "--gp-tick", "0s"},
	} {
		code, _, errOut := runArgs(context.Background(), append([]string{"teardown", "--count", "30"}, args...)...)
		if code != cli.ExitUsage || !strings.HasPrefix(errOut, "loadgen: ") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
}

// requireRootForKernel skips t unless it runs as root.
func requireRootForKernel(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// hostStorm lists the storm's mounts in this process's mount table.
func hostStorm(t *testing.T) []string {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var out []string
	for l := range strings.Lines(string(mi)) {
		if strings.Contains(l, "loadgen-umount-storm") {
			out = append(out, l)
		}
	}
	return out
}

func TestUmountStorm(t *testing.T) {
	requireRootForKernel(t)
	code, out, errOut := runArgs(context.Background(), "umount-storm", "--count", "50")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"kernel:       ", "rcupdate:     rcu_expedited=", " rcu_normal_after_boot=",
		"umount2(path, 0)", "\nmount:        wall ", "\numount:       wall ", "\nhost mounts:  ", "reference:    seed 000", "reference:    seed 001"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	code, out, errOut = runArgs(context.Background(), "umount-storm", "--count", "50", "--lazy", "--format", "json")
	var j kernelprobe.JSONResult
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if j.Schema != kernelprobe.SchemaUmountStorm || j.Mount.Calls != 50 || j.Umount.Calls != 50 || j.Lazy == nil || !*j.Lazy ||
		j.Host == nil || len(j.Host.Leaked) != 0 || len(j.Kernel.RCUpdate) != 3 {
		t.Errorf("got %s", out)
	}
	if h := hostStorm(t); len(h) > 0 {
		t.Errorf("storm mounts on the host: %q", h)
	}
}

func TestUnshare(t *testing.T) {
	requireRootForKernel(t)
	for _, ns := range []string{"ipc", "mnt", "net"} { // uts in process in loadgen's tests; pid below
		code, out, errOut := runArgs(context.Background(), "unshare", "--ns", ns, "--count", "3", "--format", "json")
		var j kernelprobe.JSONResult
		if code != cli.ExitOK || json.Unmarshal([]byte(out), &j) != nil {
			t.Fatalf("%s: exit %d, stderr %q\n%s", ns, code, errOut, out)
		}
		if j.Schema != kernelprobe.SchemaUnshare || j.NS != ns || j.Unshare == nil || j.Unshare.Calls != 3 ||
			*j.ForkPerIter != (ns == "pid") || (j.Baseline != nil) != (ns == "pid") {
			t.Errorf("%s: got %s", ns, out)
		}
	}
	code, out, _ := runArgs(context.Background(), "unshare", "--ns", "pid", "--count", "2")
	for _, want := range []string{"clone(CLONE_NEWPID)", "a fork per iteration", "\nbaseline:     ", "\nnamespace:    ", "seed 004"} {
		if code != cli.ExitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, no %q in:\n%s", code, want, out)
		}
	}
}

// buildLoadgenBinary builds this command into a directory uid 1000 can reach.
func buildLoadgenBinary(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build loadgen with:", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "loadgen")
	if b, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	for d := dir; strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	return bin
}

// The built binary: as a user the real-kernel reproductions say they
// need root and exit 2; a SIGKILL of loadgen mid-storm leaves nothing on
// the host.
func TestUmountStormBinary(t *testing.T) {
	requireRootForKernel(t)
	bin := buildLoadgenBinary(t)
	t.Run("NonRootExits2", func(t *testing.T) { kernelNonRoot(t, bin) })
	t.Run("SIGKILL", func(t *testing.T) { stormSIGKILL(t, bin) })
}

func kernelNonRoot(t *testing.T, bin string) {
	for _, args := range [][]string{{"umount-storm", "--count", "1"}, {"unshare", "--ns", "ipc", "--count", "1"}} {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitUsage || !strings.Contains(stderr.String(), "needs root") {
			t.Errorf("%q as uid 1000: %v, stderr %q; want exit 2 saying it needs root", args, err, stderr.String())
		}
	}
}

// childPids lists pid's child processes.
func childPids(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// stormSIGKILL kills loadgen in the middle of a storm: no mount, and no
// directory, is left on the host, since the child dies with loadgen, and
// its mount namespace with it.
func stormSIGKILL(t *testing.T, bin string) {
	dirsBefore, _ := filepath.Glob(filepath.Join(os.TempDir(), "loadgen-umount-storm-*"))
	cmd := exec.Command(bin, "umount-storm", "--count", "90000")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	var child int
	mounts := func() int {
		mi, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/mountinfo")
		return strings.Count(string(mi), "loadgen-umount-storm")
	}
	ok := assert.Eventually(t, func() bool {
		if c := childPids(cmd.Process.Pid); len(c) == 1 {
			child = c[0]
		}
		return child != 0 && mounts() > 200
	}, 20*time.Second, 10*time.Millisecond)
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the storm's child (pid %d) did not mount 200 tmpfs in 20 s:\n%s", child, out.String())
	}
	t.Logf("killing loadgen (pid %d) with its child %d at %d mounts", cmd.Process.Pid, child, mounts())
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	require.Eventually(t, func() bool {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		return err != nil || regexp.MustCompile(`\) [ZX] `).Match(st)
	}, 10*time.Second, 10*time.Millisecond, "the child %d outlived loadgen", child)
	if h := hostStorm(t); len(h) > 0 {
		t.Errorf("storm mounts on the host after SIGKILL: %q", h)
	}
	if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "loadgen-umount-storm-*")); len(dirs) != len(dirsBefore) {
		t.Errorf("directories left on the host: %q", dirs)
	}
}

// The singular names of teardown's lists still work, hidden, with a note
// on stderr.
func TestTeardownOldFlagNames(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), append(smallTeardown, "--sim", "--lock", "rwsem", "--gp", "normal")...)
	if code != cli.ExitOK || !strings.Contains(out, "\nrwsem ") || !strings.Contains(errOut, "--lock is now --locks") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, help, _ := runArgs(context.Background(), "teardown", "--help")
	if !strings.Contains(help, "--locks strings") || strings.Contains(help, "--lock strings") || strings.Contains(help, "--gp strings") {
		t.Errorf("help:\n%s", help)
	}
}
