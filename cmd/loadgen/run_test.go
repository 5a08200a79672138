package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen/report"
)

func TestSeedGolden(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), smallSim...)
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	rest := checkSeed(t, out, 50, 3)
	if !strings.Contains(rest, "errors:       none") {
		t.Errorf("summary lacks 'errors: none':\n%s", rest)
	}
	golden(t, "seed_sim.golden", out)
}

func TestJSONGolden(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), append(smallSim, "--format", "json", "--lock", "rcu")...)
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var j report.JSONRun
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if j.Schema != report.SchemaRun || j.Target.Lock != "rcu" || j.Threads != 3 || len(j.Concur.Workers) != 3 ||
		j.Concur.Latency.Count != 150 || j.Efficiency <= 0 {
		t.Errorf("unexpected document: %+v", j)
	}
	golden(t, "run_sim.json.golden", out)
}

var benchLine = regexp.MustCompile(`^BenchmarkSysfs/target=sim/lock=mutex/op=missing/threads=3-\d+ 150( [-\d.e+]+ (ns/op|worker-ns/op|single-ns/op|p50-ns|p99-ns|p99.9-ns|ops/s|ratio|efficiency|lock-read-util|lock-write-util|lock-contended)){12}$`)

func TestBenchGolden(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), append(smallSim, "--format", "bench", "--lock", "mutex", "--missing")...)
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !benchLine.MatchString(lines[len(lines)-1]) {
		t.Errorf("last line %q is not the benchmark line", lines[len(lines)-1])
	}
	golden(t, "bench_sim.golden", out)
}

func TestOutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	code, out, _ := runArgs(context.Background(), append(smallSim, "--format", "json", "--out", path)...)
	data, err := os.ReadFile(path)
	if code != cli.ExitOK || out != "" || err != nil || !json.Valid(data) {
		t.Errorf("exit %d, stdout %q, file %v %q: want the JSON in the file only", code, out, err, data)
	}
}

// End to end against the real /sys, as the original ran.
func TestSysEndToEnd(t *testing.T) {
	requireSys(t)
	for _, op := range []string{"open-read-close", "stat", "readdir", "walk", "same-file", "random", "hwloc"} {
		t.Run(op, func(t *testing.T) {
			times := "100"
			if op == "hwloc" {
				times = "2"
			}
			code, out, errOut := runArgs(context.Background(), "--path", "/sys", "--threads", "2", "--times", times, "--op", op)
			if code != cli.ExitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			rest := checkSeed(t, out, map[bool]int{true: 2, false: 100}[op == "hwloc"], 2)
			if !strings.Contains(rest, "target:       path: /sys") || !strings.Contains(rest, "errors:       none") {
				t.Errorf("summary:\n%s", rest)
			}
		})
	}
	code, out, _ := runArgs(context.Background(), "--path", "/sys", "--threads", "2", "--times", "100", "--missing")
	if code != cli.ExitOK || !strings.Contains(out, "of a missing path") {
		t.Errorf("--missing: exit %d:\n%s", code, out)
	}
}

func TestProcsEndToEnd(t *testing.T) {
	requireSys(t)
	code, out, errOut := runArgs(context.Background(), "--path", "/sys", "--procs", "--threads", "3", "--times", "100")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if rest := checkSeed(t, out, 100, 3); !strings.Contains(rest, "workers are processes") {
		t.Errorf("summary:\n%s", rest)
	}
}

func TestChurnSim(t *testing.T) {
	code, out, errOut := runArgs(context.Background(), "--sim", "--lock", "rwsem", "--churn", "5000", "--threads", "2", "--times", "3000", "--cpus", "8")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "churn:        5000 changes/s asked") || strings.Contains(out, "unexpected") {
		t.Errorf("output:\n%s", out)
	}
}

// quickCompare keeps a comparison that should have been refused short.
var quickCompare = []string{"--locks", "rwsem", "--threads", "1", "--repeats", "1", "--ops", "files", "--sim-times", "10"}

func TestBadInput(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim", "--threads", "0"}, "--threads must be at least 1"},
		{[]string{"--sim", "--times", "-3"}, "--times must be at least 1"},
		{[]string{"--path", "/does/not/exist"}, "--path: /does/not/exist: no such file or directory"},
		{[]string{"--path", notDir}, "is not a directory"},
		{[]string{"--sim", "--procs"}, "--procs: worker processes cannot share"},
		{[]string{"--sim", "--file", "nope"}, "--file: nope"},
		{[]string{"--sim", "--file", "bus/cpu/uevent"}, "permission denied"},
		{[]string{"--sim", "--path", "/sys"}, "exclude each other"},
		{[]string{"--path", "/sys", "--lock", "rcu"}, "--lock applies to --sim"},
		{[]string{"--sim", "--lock", "spin"}, "valid strategies are mutex, rwsem, rcu, none"},
		{[]string{"--sim", "--op", "bogus"}, "unknown operation"},
		{[]string{"--sim", "--format", "xml"}, "valid formats are seed, json and bench"},
		{[]string{"--sim", "--missing", "--op", "readdir"}, "--missing: a missing path cannot be the object of readdir"},
		{[]string{"--sim", "--missing", "--missing-path", "devices"}, "--missing-path: devices"},
		{[]string{"--sim", "--cpus", "6"}, "invalid value 6 for --cpus: must be a multiple of --sockets x --threads-per-core"},
		{[]string{"--sim", "--lock", "none", "--churn", "10"}, "--churn: lock strategy none refuses writers"},
		{[]string{"--path", "/sys", "--churn", "10"}, "no kernfsim device control files"},
		{[]string{"--sim", "--out", "/does/not/exist/x"}, "--out:"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"stray"}, "unknown command"},
		{[]string{"compare", "--locks", "spin"}, `--locks: "spin" is not one of`},
		{[]string{"compare", "--threads", "0"}, "--threads: 0 is not a positive thread count"},
		{[]string{"compare", "--targets", "sys", "--sys", "/does/not/exist"}, "--sys /does/not/exist"},
		{[]string{"compare", "--ops", "bogus", "--targets", "sim"}, `--ops: unknown op "bogus"`},
		{[]string{"compare", "--sim", "--targets", "sys"}, "--sim is --targets sim"},
		{[]string{"--sim", "--sim-cost", "fast"}, "give a duration such as 5us"},
		{[]string{"--sim", "--sim-cost", "-1us"}, "0 to a few microseconds"},
		{[]string{"--path", "/sys", "--sim-cost", "5us"}, "--sim-cost and --calibrate apply to the sim"},
		{[]string{"--sim", "--calibrate", "/sys"}, "add --sim-cost auto"},
		{[]string{"--sim", "--sim-cost", "auto", "--op", "hwloc"}, "--sim-cost: hwloc makes many system calls per operation"},
		{[]string{"compare", "--targets", "sys", "--sim-cost", "auto"}, "apply to the sim"},
		{[]string{"--sim", "--sim-cost", "auto", "--calibrate", "/does/not/exist"}, "--calibrate: /does/not/exist is not a directory"},
		{[]string{"compare", "--sim", "--sim-cost", "auto", "--calibrate", "/does/not/exist"}, "--calibrate: /does/not/exist is not a directory"},
		// a flag's value is checked also where the flag does not apply
		{[]string{"--sim", "--transport", "bogus"}, `invalid argument "bogus" for "--transport" flag: valid transports are auto, devfuse, uring`},
		{[]string{"--path", "/sys", "--transport", "bogus"}, "valid transports are auto, devfuse, uring"},
		{[]string{"--transport", "bogus"}, "valid transports are auto, devfuse, uring"},
		{append([]string{"compare", "--sim", "--transports", "devfuse,bogus"}, quickCompare...), `--transports: "bogus" is not one of auto, devfuse, uring`},
		// a flag that does not apply to the target is an error, as --lock with --path is
		{[]string{"--sim", "--transport", "uring"}, "--transport applies to the server loadgen starts; --sim starts none"},
		{[]string{"--path", "/sys", "--transport", "devfuse"}, "--transport applies to the server loadgen starts; the mount at --path has its own"},
		{[]string{"--sim", "--server-arg=--entry-timeout=1s"}, "--server-arg applies to the server loadgen starts"},
		{[]string{"--path", "/sys", "--server-arg=--entry-timeout=1s"}, "--server-arg applies to the server loadgen starts"},
		{[]string{"--path", "/sys", "--mem-blocks", "4"}, "--mem-blocks applies to --sim and to the server loadgen starts; the mount at --path has its own"},
		{[]string{"--path", "/sys", "--tree", "host"}, "--tree applies to --sim"},
		{append([]string{"compare", "--sim", "--transports", "uring"}, quickCompare...), "--transports applies to the kernfsim rows"},
		{append([]string{"compare", "--targets", "sim,sys", "--server-arg=--entry-timeout=1s"}, quickCompare...), "--server-arg applies to the kernfsim rows"},
		{[]string{"teardown", "--sim", "--count", "1", "--server-arg=--entry-timeout=1s"}, "--server-arg applies to the servers loadgen starts; --sim starts none"},
		{[]string{"teardown", "--path", "/tmp", "--cpus", "4"}, "--cpus applies to --sim"},
		{[]string{"teardown", "--path", "/tmp", "--server-arg=--entry-timeout=1s"}, "--server-arg applies to the servers loadgen starts"},
		// an empty path is named, not taken for the current directory, stdout or the default
		{[]string{"--times", "10", "--path", ""}, `invalid argument "" for "--path" flag: the path is empty`},
		{[]string{"--sim", "--out", ""}, `invalid argument "" for "--out" flag`},
		{[]string{"--sim", "--missing", "--missing-path="}, `invalid argument "" for "--missing-path" flag`},
		{[]string{"--sim", "--sim-cost", "auto", "--calibrate", ""}, `invalid argument "" for "--calibrate" flag`},
		{append([]string{"compare", "--sim", "--out", ""}, quickCompare...), `invalid argument "" for "--out" flag`},
		{append([]string{"compare", "--sim", "--plot", ""}, quickCompare...), `invalid argument "" for "--plot" flag`},
		{[]string{"compare", "--targets", "sys", "--sys", ""}, `invalid argument "" for "--sys" flag`},
		{[]string{"teardown", "--count", "1", "--path", ""}, `invalid argument "" for "--path" flag`},
		{[]string{"teardown", "--sim", "--count", "1", "--out="}, `invalid argument "" for "--out" flag`},
		{[]string{"soak", "--duration", "1s", "--path", ""}, `invalid argument "" for "--path" flag`},
		{[]string{"unshare", "--count", "1", "--out", ""}, `invalid argument "" for "--out" flag`},
		{[]string{"umount-storm", "--count", "1", "--out", ""}, `invalid argument "" for "--out" flag`},
		{[]string{"plot", "result.json", "-o", ""}, `invalid argument "" for "-o, --out" flag`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runArgs(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q (stdout %q): want exit 2 and %q", code, errOut, out, tc.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runArgs(context.Background(), "--help")
	for _, want := range []string{"--sim", "--path", "--missing", "--procs", "--churn", "--cpus", "--sim-cost", "--calibrate", "compare"} {
		if code != cli.ExitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, help lacks %q", code, want)
		}
	}
	if strings.Contains(out, "__worker") || strings.Contains(out, "__serve") {
		t.Error("help shows a hidden command")
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runArgs(context.Background(), "--version")
	if code != cli.ExitOK || !regexp.MustCompile(`^loadgen \S+ \((rev [0-9a-f]+(\+dirty)?|revision unknown: [^,]+), go1\.[^)]+\)\n$`).MatchString(out) {
		t.Errorf("exit %d, %q", code, out)
	}
}

// --sim-cost puts the work outside the lock in every output format.
func TestSimCostFlag(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"seed", "+2.00us of work outside the lock per op"},
		{"json", `"sim_cost_ns": 2000`},
		{"bench", "/simcost=2000ns/"},
	} {
		code, out, errOut := runArgs(context.Background(), append(smallSim, "--sim-cost", "2us", "--format", tc.format)...)
		if code != cli.ExitOK || !strings.Contains(out, tc.want) {
			t.Errorf("--format %s: exit %d, stderr %q: want exit 0 and %q in:\n%s", tc.format, code, errOut, tc.want, out)
		}
	}
	code, out, errOut := runArgs(context.Background(), "compare", "--sim", "--locks", "rwsem", "--threads", "1,2",
		"--sim-times", "50", "--repeats", "1", "--ops", "files", "--sim-cost", "2us")
	if want := "sim=fixed (+2.00us of work outside the lock per op, and the kernel's shared writes)"; code != cli.ExitOK || !strings.Contains(out, want) {
		t.Errorf("compare: exit %d, stderr %q: want exit 0 and %q in:\n%s", code, errOut, want, out)
	}
}

// Goldens keep the output's shape without the warnings, which come and go
// with the machine's load.
func TestShapeDropsWarnings(t *testing.T) {
	with := "x\n\nwarnings (runs that may mislead; each run's own in --format json):\n  sim op=files threads=1: efficiency\n  (raise --times, or more)\ny e0.50!\n# warning: a\nwarning:      b\n"
	if got, want := shape(with), shape("x\ny e0.50\n"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
