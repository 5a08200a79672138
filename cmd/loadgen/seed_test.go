package main

import (
	"context"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/cli"
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
	for _, want := range []string{"seed 002 (Ian Kent, 2021", "missing  48", "not measured (give --threads 48 and --locks mutex,rwsem)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, _, errOut = runArgs(context.Background(), append(args, "--format", "json")...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "--seed adds a table to the text output, not to --format json") {
		t.Errorf("--seed --format json: exit %d, stderr %q", code, errOut)
	}
}
