package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kernfsim/kernfsim/internal/goldenfile"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestMain lets the test binary stand in for loadgen's own re-executions
// (`loadgen __worker`, and `loadgen __serve`, which runs the real
// internal/mountcmd server).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "__") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// A TMPDIR of its own, so that the leftover checks see only this
	// binary's mountpoints.
	dir, err := os.MkdirTemp("", "loadgen-cmd-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("TMPDIR", dir)
	code := m.Run()
	os.Remove(dir)
	os.Exit(code)
}

// runArgs runs the command line and returns its exit status and output.
func runArgs(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// smallSim is a quick --sim run on a small tree.
var smallSim = []string{"--sim", "--threads", "3", "--times", "50", "--cpus", "8", "--mem-blocks", "4"}

// numbers are what varies between runs: figures with their units.
var numbers = regexp.MustCompile(`-?\d+(\.\d+)?(e[+-]\d+)?(ns|us|ms|s)?`)

var spaces = regexp.MustCompile(` +`)

// machine is what names this build and machine in a result: it differs
// between machines, so goldens keep only its label.
var (
	machine     = regexp.MustCompile(`(?m)^(program:|machine:|cpu:|# loadgen|# machine:).*$`)
	machineJSON = regexp.MustCompile(`"(version|revision|go_version|kernel|cpu_model|start)": "[^"]*"`)
)

// warnings are what a run says of its own figures, and what compare's
// summary finds: they come and go with the machine's load (the summary's
// and the warnings' own tests use fixed figures).
var warnings = regexp.MustCompile(`(?m)^(# )?warning:.*\n|\n(warnings|explained|summary)[^\n]*:\n(  .*\n)*|` +
	`(?m)^\s*"warnings": \[\n(?:.*\n)*?\s*\],\n|!`)

// bindings are compare's "binds at (model)" blocks: which class binds,
// and whether a sampled write hold made one bind at all, come and go with
// the run (loadgen/report.TestCompareBindTable checks the block on fixed
// figures), so the shape keeps only that the block is there.
var bindings = regexp.MustCompile(`(?m)^binds at \(model\).*\n(?:.+\n)*`)

// shape replaces every figure with #, the build and machine with *, and
// every run of spaces with one, and drops warnings, leaving the output's
// shape (table columns are as wide as the figures).
func shape(s string) string {
	s = bindings.ReplaceAllString(s, "binds at (model): *\n")
	s = machine.ReplaceAllString(warnings.ReplaceAllString(s, ""), "$1 *")
	s = machineJSON.ReplaceAllString(s, `"$1": "*"`)
	return spaces.ReplaceAllString(numbers.ReplaceAllString(s, "#"), " ")
}

// golden compares the shape of got with testdata/name, or rewrites it
// with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, name, shape(got))
}

// The original program's lines, exactly.
var (
	singleLine = regexp.MustCompile(`^single: total \d+\.\d{6}ms per \d+\.\d{6}us$`)
	concurLine = regexp.MustCompile(`^concur: total \d+\.\d{6}ms per \d+\.\d{6}us  CPU -?\d+$`)
	timesLine  = regexp.MustCompile(`^times: (\d+) threads: (\d+) cpus: (\d+)$`)
)

// checkSeed checks the seed lines of out: single, threads concur lines,
// times; it returns the rest.
func checkSeed(t *testing.T, out string, times, threads int) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) < threads+3 {
		t.Fatalf("%d lines, want at least %d:\n%s", len(lines), threads+3, out)
	}
	if !singleLine.MatchString(lines[0]) {
		t.Errorf("line 1 %q is not a single: line", lines[0])
	}
	for _, l := range lines[1 : 1+threads] {
		if !concurLine.MatchString(l) {
			t.Errorf("%q is not a concur: line", l)
		}
	}
	m := timesLine.FindStringSubmatch(lines[1+threads])
	if m == nil || m[1] != strconv.Itoa(times) || m[2] != strconv.Itoa(threads) {
		t.Errorf("line %q: want times: %d threads: %d cpus: N", lines[1+threads], times, threads)
	}
	return strings.Join(lines[2+threads:], "\n")
}

// noLeftovers fails t if a temporary mountpoint of loadgen's is still in
// the temporary directory or mounted.
func noLeftovers(t *testing.T) {
	t.Helper()
	prefix := filepath.Join(os.TempDir(), "loadgen-kernfsim-")
	dirs, _ := filepath.Glob(prefix + "*")
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if len(dirs) > 0 || strings.Contains(string(mi), prefix) {
		t.Errorf("left behind: %q\n%s", dirs, mi)
	}
}

func requireSys(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/topology/core_id"); err != nil {
		t.Skip("no /sys CPU topology:", err)
	}
}

func requireFUSE(t *testing.T) {
	t.Helper()
	requireSys(t)
	testkit.RequireFUSE(t)
}
