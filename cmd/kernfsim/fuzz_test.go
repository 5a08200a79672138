package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/clitest"
)

// FuzzArgs runs kernfsim's command line with fuzzed arguments: it must
// never panic, exit only 0, 1 or 2, and on exit 2 say why on stderr and
// print nothing on stdout. Only tree, cpuinfo and stats run, so nothing
// is mounted (mount's own refusals are tests.TestMountErrors); arguments
// naming another subcommand, a host mirror (--tree host reads a whole
// /sys) or an archive (--tree archive:FILE reads FILE) are left out, and an input with a number above clitest.MaxNumber is
// skipped: a tree of a million CPUs is valid, only slow to build.
func FuzzArgs(f *testing.F) {
	for _, seed := range []struct {
		sub  uint8
		line string
	}{
		{0, "--cpus\n4\n--sockets\n1\n--mem-blocks\n2\n--netdevs\n1\n--disks\n1"},
		{0, "--cpus=2\n--sockets=2\n--threads-per-core=1"},
		{0, "--cpus\n3\n--sockets\n2"},
		{0, "--cpus\n0"},
		{0, "--tree\nforest"},
		{0, "--cpus\n-1"},
		{0, "--numa-nodes\n5\n--sockets\n2"},
		{0, "extra"},
		{1, "--cpus\n8\n--sockets\n2\n--threads-per-core\n2"},
		{1, "--tree\nsynthetic"},
		{1, "--tree\n/sys"},
		{2, "/nonexistent"},
		{2, "."},
		{2, ""},
		{2, "a\nb"},
		{0, "--help"},
		{0, "--version"},
		{0, ""},
	} {
		f.Add(seed.sub, seed.line)
	}
	f.Fuzz(func(t *testing.T, sub uint8, line string) {
		args, ok := fuzzArgs(sub, line)
		if !ok {
			t.Skip("a number too large to run quickly")
		}
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		clitest.CheckExit(t, "kernfsim", args, code, stdout.String(), stderr.String())
	})
}

// fuzzSubcommands are the subcommands FuzzArgs runs; sub picks one.
var fuzzSubcommands = []string{"tree", "cpuinfo", "stats"}

// fuzzArgs turns a fuzzed line (arguments separated by newlines) into a
// command line for subcommand sub, leaving out arguments that name
// another subcommand, a host mirror or an archive. It is not ok when a number in it
// is above clitest.MaxNumber.
func fuzzArgs(sub uint8, line string) ([]string, bool) {
	args := []string{fuzzSubcommands[int(sub)%len(fuzzSubcommands)]}
	if line == "" {
		return args, true
	}
	var other []string
	for _, c := range newRootCmd().Commands() {
		if !slices.Contains(fuzzSubcommands, c.Name()) {
			other = append(append(other, c.Name()), c.Aliases...)
		}
	}
	for _, a := range strings.Split(line, "\n") {
		switch {
		case slices.Contains(other, a) || strings.HasPrefix(a, "__") || strings.Contains(a, "host") || strings.Contains(a, "archive"):
		case clitest.TooLarge(a):
			return nil, false
		default:
			args = append(args, a)
		}
	}
	return args, true
}
