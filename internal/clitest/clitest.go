// Package clitest holds what the commands' fuzz tests share.
//
// It has the command-line contract every run must keep, and the bound
// that keeps fuzzed runs fast.
package clitest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/cli"
)

// MaxNumber bounds the numbers in a fuzzed command line: a tree of a
// million CPUs is valid, only slow to build.
const MaxNumber = 256

// CheckExit fails t if prog's run of args broke the contract: it must
// never panic, exit only 0, 1 or 2, and on exit 2 say why on stderr and
// print nothing on stdout.
func CheckExit(t *testing.T, prog string, args []string, code int, stdout, stderr string) {
	t.Helper()
	switch {
	case strings.Contains(stderr, "internal error"):
		t.Fatalf("%s %q panicked:\n%s", prog, args, stderr)
	case code != cli.ExitOK && code != cli.ExitRuntime && code != cli.ExitUsage:
		t.Fatalf("%s %q: exit %d, want 0, 1 or 2", prog, args, code)
	case code == cli.ExitUsage && (stderr == "" || stdout != ""):
		t.Fatalf("%s %q: exit 2 with stdout %q, stderr %q: want the message on stderr only", prog, args, stdout, stderr)
	}
}

// TooLarge reports whether arg, or its value after '=' (a comma list
// too), holds an integer (any base Go's parser takes, as pflag's) beyond
// ±MaxNumber, a number above 1000 MaxNumber, or a run of more than three
// digits.
func TooLarge(arg string) bool {
	_, v, found := strings.Cut(arg, "=")
	if !found {
		v = arg
	}
	for _, x := range strings.Split(v, ",") {
		x = strings.TrimSpace(x)
		if n, err := strconv.ParseInt(x, 0, 64); err == nil && (n > MaxNumber || n < -MaxNumber) {
			return true
		}
		if f, err := strconv.ParseFloat(x, 64); err == nil && f > MaxNumber*1000 {
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
