package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzArgs runs loadgen's command line with fuzzed arguments: it must
// never panic, exit only 0, 1 or 2, and on exit 2 say why on stderr and
// print nothing on stdout. The runs are kept fast and free of side
// effects: the context is cancelled first (a valid command line is
// parsed, validated and set up, then stops at once), no kernfsim server
// can start (serveMain is nil), only the root command, compare and soak
// run (see fuzzArgs for what else is left out), and an input with a number
// above fuzzMaxNumber is skipped: a tree of a million CPUs is valid, only
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
		switch {
		case strings.Contains(stderr.String(), "internal error"):
			t.Fatalf("loadgen %q panicked:\n%s", args, stderr.String())
		case code != exitOK && code != exitRuntime && code != exitUsage:
			t.Fatalf("loadgen %q: exit %d, want 0, 1 or 2", args, code)
		case code == exitUsage && (stderr.Len() == 0 || stdout.Len() > 0):
			t.Fatalf("loadgen %q: exit 2 with stdout %q, stderr %q: want the message on stderr only", args, stdout.String(), stderr.String())
		}
		noLeftovers(t)
	})
}

// fuzzMaxNumber bounds every number in a fuzzed command line.
const fuzzMaxNumber = 256

// fuzzSubcommands are the subcommands FuzzArgs runs; sub picks one.
var fuzzSubcommands = []string{"", "compare", "soak"}

// fuzzDropped are flags FuzzArgs drops: they write files, read outside
// the in-process tree or start processes.
var fuzzDropped = []string{"out", "plot", "path", "sys", "procs", "server-arg", "server-pid"}

// fuzzArgs turns a fuzzed line (arguments separated by newlines) into a
// command line for subcommand sub: arguments naming another subcommand
// (one that mounts, unmounts or unshares) or a dropped flag are left out.
// It is not ok when a number in it is above fuzzMaxNumber.
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
	for _, a := range strings.Split(line, "\n") {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case other[a] || strings.HasPrefix(a, "__"):
		case strings.HasPrefix(a, "-") && slices.Contains(fuzzDropped, name):
		case tooLarge(a):
			return nil, false
		default:
			args = append(args, a)
		}
	}
	return args, true
}

// tooLarge reports whether arg, or its value after '=', holds an integer
// (any base Go's parser takes, as pflag's) above fuzzMaxNumber, alone or
// in a comma-separated list, or a run of more than three digits.
func tooLarge(arg string) bool {
	_, v, found := strings.Cut(arg, "=")
	if !found {
		v = arg
	}
	for _, x := range strings.Split(v, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 0, 64); err == nil && (n > fuzzMaxNumber || n < -fuzzMaxNumber) {
			return true
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && f > fuzzMaxNumber*1000 {
			return true
		}
	}
	digits := 0
	for _, r := range arg {
		if r >= '0' && r <= '9' {
			digits++
		} else {
			digits = 0
		}
		if digits > 3 {
			return true
		}
	}
	return false
}
