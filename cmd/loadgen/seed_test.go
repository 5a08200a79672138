package main

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/locking"
)

// TestCompareSeed: --seed prints seed 002's figures beside the run's,
// and is refused with a format it cannot join.
func TestCompareSeed(t *testing.T) {
	args := []string{"compare", "--sim", "--locks", "mutex,rwsem", "--threads", "1,2", "--ops", "missing",
		"--times", "20", "--sim-times", "50", "--repeats", "1", "--min-duration", "0", "--cpus", "8", "--mem-blocks", "4", "--seed"}
	code, out, errOut := runArgs(context.Background(), args...)
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"seed 002 (Ian Kent, 2021", "missing  48", "not measured (give --threads 48 and --locks mutex,rwsem)",
		"not run: --sim measures the sim rows alone"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Issue 33: with the seed's thread counts and locks given, the
	// kernfsim column named them as missing, where --sim left it out.
	seedArgs := slices.Clone(args)
	seedArgs[slices.Index(seedArgs, "1,2")] = "1,16,48"
	code, out, errOut = runArgs(context.Background(), seedArgs...)
	if code != cli.ExitOK || strings.Contains(out, "not measured") || !strings.Contains(out, "not run: --sim measures the sim rows alone") {
		t.Errorf("--sim --threads 1,16,48 --locks mutex,rwsem --seed: exit %d, stderr %q; want every kernfsim cell \"not run: --sim ...\", none \"not measured\":\n%s", code, errOut, out)
	}
	code, _, errOut = runArgs(context.Background(), append(args, "--format", "json")...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "--seed adds a table to the text output, not to --format json") {
		t.Errorf("--seed --format json: exit %d, stderr %q", code, errOut)
	}
}

// TestCompareLocksAll: the default rows are the main job's four; --locks
// all is every design, and only alone.
func TestCompareLocksAll(t *testing.T) {
	base := []string{"compare", "--sim", "--threads", "1", "--ops", "missing", "--times", "5", "--sim-times", "20",
		"--repeats", "1", "--min-duration", "0", "--warm-up", "0", "--cpus", "8", "--mem-blocks", "4"}
	code, out, errOut := runArgs(context.Background(), append(base, "--locks", "all")...)
	if code != cli.ExitOK {
		t.Fatalf("--locks all: exit %d, stderr %q", code, errOut)
	}
	for _, l := range locking.Names {
		if !regexp.MustCompile(`(?m)^sim\s+` + regexp.QuoteMeta(l) + `\s`).MatchString(out) {
			t.Errorf("--locks all: no sim %s row:\n%s", l, out)
		}
	}
	code, out, _ = runArgs(context.Background(), base...)
	if rows := regexp.MustCompile(`(?m)^sim\s+\S+\s+\S+ ±`).FindAllString(out, -1); code != cli.ExitOK || len(rows) != 4 {
		t.Errorf("default: exit %d, %d sim rows, want 4:\n%s", code, len(rows), out)
	}
	for _, locks := range []string{"all,mutex", "all,all"} {
		code, _, errOut = runArgs(context.Background(), append(base, "--locks", locks)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, "--locks all is every design: give it alone, not in a list (got --locks "+locks+")") {
			t.Errorf("--locks %s: exit %d, stderr %q", locks, code, errOut)
		}
	}
}
