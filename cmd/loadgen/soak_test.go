package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/kernfsim/kernfsim/internal/cli"
)

func TestSoakFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"duration", []string{"--duration", "0s"}, []string{"--duration must be positive"}},
		{"interval", []string{"--interval", "-1s"}, []string{"--interval must be positive"}},
		{"warmup", []string{"--warmup", "-1s"}, []string{"--warmup"}},
		{"churn", []string{"--churn", "0"}, []string{"--churn"}},
		{"per-op", []string{"--per-op", "0"}, []string{"--per-op must be at least 1"}},
		{"tolerance", []string{"--tolerance", "-0.1"}, []string{"--tolerance"}},
		{"rss-slack", []string{"--rss-slack-mib", "-1"}, []string{"--rss-slack-mib must be 0 or more"}},
		{"locks with path", []string{"--path", "/tmp", "--server-pid", "1", "--locks", "rcu"}, []string{"--locks", "--path"}},
		{"tree flags with path", []string{"--path", "/tmp", "--server-pid", "1", "--cpus", "4"}, []string{"tree flags", "--path"}},
		{"server-pid without path", []string{"--server-pid", "1"}, []string{"--path and --server-pid go together"}},
		{"path without server-pid", []string{"--path", "/tmp"}, []string{"--path and --server-pid go together"}},
		{"lock", []string{"--locks", "spin", "--duration", "1m"}, []string{"lock", "spin", "mutex, rwsem, rcu, none"}},
		{"reader", []string{"--readers", "hwloc", "--duration", "1m"}, []string{"--op", "hwloc"}},
		{"too short", []string{"--duration", "3s"}, []string{"3s", "at least 2s per lock mode"}},
		{"positional", []string{"extra"}, []string{"unknown command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runArgs(context.Background(), append([]string{"soak"}, tt.args...)...)
			if code != cli.ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q: want 2 and nothing", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

// TestSoakNotKernfsim soaks a directory that is no kernfsim mount: bad
// input, exit 2.
func TestSoakNotKernfsim(t *testing.T) {
	code, _, errOut := runArgs(context.Background(), "soak", "--path", t.TempDir(), "--server-pid", "1", "--duration", "2s")
	if code != cli.ExitUsage || !strings.Contains(errOut, "kernfsim") {
		t.Errorf("exit %d, stderr %q: want 2 and a message saying it is no kernfsim mount", code, errOut)
	}
}

var (
	soakSampleLine = regexp.MustCompile(`(?m)^soak lock=rwsem t=\d+s( warm-up)? ops/s=\d+ p99=\S+ errors=\S+ rss=[\d.]+MiB goroutines=\d+ threads=\d+ nodeids=\d+ changes=\d+ storms=\d+$`)
	soakModeBlock  = regexp.MustCompile(`(?m)^soak lock=rwsem done in .*\n  errors: .*\n  rss: .*\n  goroutines: .*\n  threads: .*\n  nodeids: +(\d+) after drop_caches, baseline (\d+).*\n  verdict: +ok$`)
)

// TestSoakServer soaks one lock mode briefly on a server loadgen starts
// (this test binary's __serve, the real kernfsim mount): the lines, the
// mode's block and the verdict. The levels' tolerance is wide: a soak of
// seconds is too short for RSS to settle (tests/soak_test.go checks 10%).
func TestSoakServer(t *testing.T) {
	requireFUSE(t)
	code, out, errOut := runArgs(context.Background(), "soak", "--locks", "rwsem", "--duration", "3s", "--interval", "1s",
		"--storm-every", "300ms", "--storm-size", "8", "--tolerance", "10", "--cpus", "4", "--sockets", "1", "--mem-blocks", "4")
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	if n := len(soakSampleLine.FindAllString(out, -1)); n < 3 {
		t.Errorf("%d sample lines, want at least 3:\n%s", n, out)
	}
	if m := soakModeBlock.FindStringSubmatch(out); m == nil || m[1] != m[2] {
		t.Errorf("no mode block with the nodeid table back to baseline:\n%s", out)
	}
	if !strings.HasSuffix(out, "soak: ok (rwsem): no unexpected errno; server RSS and goroutines within their limits of the level after warm-up; nodeid table back to baseline after drop_caches\n") {
		t.Errorf("last line is not the verdict:\n%s", out)
	}
	noLeftovers(t)
}
