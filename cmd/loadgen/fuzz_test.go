package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/clitest"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/teardown"
	"github.com/kernfsim/kernfsim/sysfs"
)

// FuzzArgs runs loadgen's command line with fuzzed arguments: it must
// never panic, exit only 0, 1 or 2, and on exit 2 say why on stderr and
// print nothing on stdout. The runs are kept fast and free of side
// effects: the context is cancelled first (a valid command line is
// parsed, validated and set up, then stops at once), no kernfsim server
// can start (serveMain is nil), only the root command, compare and soak
// run (see fuzzArgs for what else is left out), and an input with a number
// above clitest.MaxNumber is skipped: a tree of a million CPUs is valid, only
// slow to build.
func FuzzArgs(f *testing.F) {
	for _, seed := range []struct {
		sub  uint8
		line string
	}{
		{0, "--sim\n--threads\n2\n--times\n5\n--cpus\n4\n--mem-blocks\n2"},
		{0, "--sim\n--lock=rcu\n--missing\n--op\nstat\n--format\njson"},
		{0, "--sim\n--op\nhwloc\n--sockets\n3\n--cpus\n4"},
		{0, "--sim\n--churn\n-1\n--lock\nnone"},
		{0, "--threads\n0"},
		{0, "--sim\n--op\nnosuch"},
		{0, "--format\nxml\n--times=1_0"},
		{0, "--sim\n--procs\n--bufsize\n0x10"},
		{0, "--lock\nspin\n--\nextra"},
		{1, "--targets\nsim\n--threads\n1,2\n--times\n3\n--repeats\n1\n--locks\nmutex,rcu"},
		{1, "--threads\n0,-1\n--ops\nfiles,nosuch"},
		{1, "--format\nbench\n--targets\nsim,kernfsim"},
		{2, "--duration\n6s\n--interval\n1s"},
		{2, "--duration\n0\n--locks\n"},
		{2, "--readers\nhwloc\n--storm-size\n-3"},
		{2, "--warmup\n1h\n--tolerance\nNaN"},
		{0, "--sim\n--threads\n10001\n--files\n1\n--times\n1"},
		{0, "--sim\n--threads=12000\n--files\n1\n--times\n1"},
		{0, "--sim\n--bufsize\n100000000000\n--times\n10\n--threads\n1"},
		{0, "--sim\n--bufsize\n9223372036854775807"},
		{0, "--sim\n--threads\n2147483647\n--bufsize\n2147483647"},
		{0, "--sim\n--churn\n1e300"},
		{1, "--targets\nsim\n--threads\n1,12000\n--times\n3"},
		{2, "--per-op\n100000"},
		{2, "--storm-size\n99999999999"},
		{3, "--sim\n--count\n100000000\n--batch\n100000000"},
		{3, "--sim\n--readers\n50000"},
		{3, "--sim\n--count\n4\n--gp\nnormal"},
		{0, "--help"},
		{0, ""},
	} {
		f.Add(seed.sub, seed.line)
	}
	old := serveMain
	serveMain = nil
	f.Cleanup(func() { serveMain = old })
	f.Fuzz(func(t *testing.T, sub uint8, line string) {
		args, ok := fuzzArgs(sub, line)
		if !ok {
			t.Skip("a number too large to run quickly")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, &stdout, &stderr)
		clitest.CheckExit(t, "loadgen", args, code, stdout.String(), stderr.String())
		noLeftovers(t)
	})
}

// fuzzBounded are the flags whose values loadgen bounds by what the
// machine can give (threads, buffers, counts), each with a number above
// which every value is refused with exit 2 at once: such values are run,
// not skipped. 10000 is Go's default thread limit.
var fuzzBounded = map[string]float64{
	"threads": 10000, "readers": 10000, "per-op": 10000, "bufsize": float64(loadgen.MaxBufSize),
	"count": teardown.MaxSimDevices, "batch": teardown.MaxSimDevices, "storm-size": 256, "attrs": 64, "churn": 100000,
	"writers": loadgen.MaxWriters, "write-rate": 100000, "cgroups": sysfs.MaxSynthCgroups,
}

// fuzzSubcommands are the subcommands FuzzArgs runs; sub picks one.
var fuzzSubcommands = []string{"", "compare", "soak", "teardown"}

// fuzzDropped are flags FuzzArgs drops: they write files, read outside
// the in-process tree or start processes.
var fuzzDropped = []string{"out", "plot", "path", "sys", "procs", "server-arg", "server-pid"}

// fuzzArgs turns a fuzzed line (arguments separated by newlines) into a
// command line for subcommand sub: arguments naming another subcommand
// (one that mounts, unmounts or unshares) or a dropped flag are left out.
// It is not ok when a number in it is above clitest.MaxNumber.
func fuzzArgs(sub uint8, line string) ([]string, bool) {
	other := map[string]bool{}
	for _, c := range newRootCmd(io.Discard).Commands() {
		for _, name := range append([]string{c.Name()}, c.Aliases...) {
			other[name] = !slices.Contains(fuzzSubcommands, name)
		}
	}
	var args []string
	if s := fuzzSubcommands[int(sub)%len(fuzzSubcommands)]; s != "" {
		args = append(args, s)
	}
	if line == "" {
		return args, true
	}
	flag := "" // the flag a bare value belongs to
	for _, a := range strings.Split(line, "\n") {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") {
			flag = name
		}
		switch {
		case other[a] || strings.HasPrefix(a, "__"):
		case strings.HasPrefix(a, "-") && slices.Contains(fuzzDropped, name):
		case clitest.TooLarge(a) && !(fuzzBounded[flag] > 0 && refused(a, fuzzBounded[flag])):
			return nil, false
		default:
			args = append(args, a)
		}
		if !strings.HasPrefix(a, "-") || hasValue {
			flag = ""
		}
	}
	return args, true
}

// refused reports whether every number in arg (or its value after '=')
// above clitest.MaxNumber is above ceiling too, so it is refused at once.
func refused(arg string, ceiling float64) bool {
	if _, v, found := strings.Cut(arg, "="); found {
		arg = v
	}
	for _, x := range strings.Split(arg, ",") {
		x = strings.TrimSpace(x)
		f, err := strconv.ParseFloat(x, 64)
		if n, ierr := strconv.ParseInt(x, 0, 64); ierr == nil {
			f, err = float64(n), nil
		}
		if err == nil && f > clitest.MaxNumber && f <= ceiling || err != nil && clitest.TooLarge(x) {
			return false
		}
	}
	return true
}
