package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/goldenfile"
	"github.com/kernfsim/kernfsim/locking"
)

// runArgs runs the command line and returns its exit status and output.
func runArgs(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var smallTree = []string{"--cpus", "2", "--sockets", "1", "--threads-per-core", "1",
	"--mem-blocks", "2", "--netdevs", "1", "--disks", "1"}

func TestTreeGolden(t *testing.T) {
	for _, lock := range locking.Names {
		t.Run("lock="+lock, func(t *testing.T) { goldenfile.Check(t, "tree_small.golden", treeUnder(t, lock)) })
	}
}

// treeUnder prints the small tree built under lock: the same under every
// lock, which is why kernfsim tree has no --lock.
func treeUnder(t *testing.T, lock string) string {
	t.Helper()
	var f cli.TreeFlags
	fs := pflag.NewFlagSet("tree", pflag.ContinueOnError)
	cli.AddTreeFlags(fs, &f)
	if err := fs.Parse(smallTree); err != nil {
		t.Fatal(err)
	}
	b, err := f.BuildWith(lock, fusefs.StatsSource)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printTree(context.Background(), &out, b.Tree); err != nil {
		t.Fatal(err)
	}
	if _, cmdOut, errOut := runArgs(context.Background(), append([]string{"tree"}, smallTree...)...); lock == "rwsem" && cmdOut != out.String() {
		t.Errorf("kernfsim tree differs from the rwsem tree (stderr %q)", errOut)
	}
	return out.String()
}

func TestTreeLines(t *testing.T) {
	code, out, _ := runArgs(context.Background(), append([]string{"tree"}, smallTree...)...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"d 0755 devices\n",
		"f 0444 devices/system/cpu/cpu0/topology/core_id\n",
		"f 0644 devices/system/cpu/cpu1/online\n",
		"f 0200 devices/system/node/node0/compact\n",
		"l 0777 class/net/lo -> ../../devices/virtual/net/lo\n",
		"l 0777 devices/system/cpu/cpu0/node0 -> ../../node/node0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "cpu0/online") {
		t.Errorf("cpu0 has an online file; x86 has none")
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of stderr
	}{
		{[]string{"tree", "--cpus", "x"}, []string{`"--cpus"`}},
		{[]string{"tree", "--cpus", "0"}, []string{"--cpus", "1..8192"}},
		{[]string{"tree", "--cpus", "6"}, []string{"--cpus", "multiple of --sockets x --threads-per-core = 4"}},
		{[]string{"tree", "--numa-nodes", "3"}, []string{"--numa-nodes"}},
		{[]string{"tree", "--mem-blocks", "2000000"}, []string{"--mem-blocks", "0..1048576"}},
		{[]string{"tree", "--netdevs", "-1"}, []string{"--netdevs"}},
		{[]string{"mount", "/nonexistent", "--lock", "spin"}, []string{`"--lock"`, "mutex, rwsem, rcu, none"}},
		{[]string{"tree", "--lock", "rcu"}, []string{"unknown flag: --lock"}},
		{[]string{"mount"}, []string{"missing MOUNTPOINT", "kernfsim mount /mnt/k"}},
		{[]string{"stats"}, []string{"missing MOUNTPOINT", "kernfsim stats /mnt/k"}},
		{[]string{"stats", "/a", "/b"}, []string{"one MOUNTPOINT only"}},
		{[]string{"tree", "--tree", "host:/nonexistent"}, []string{"host:/nonexistent: no such file or directory", "give the directory to mirror"}},
		{[]string{"tree", "--tree", "host:/proc/self/status"}, []string{"host:/proc/self/status is a regular file, not a directory", "give the directory to mirror"}},
		{[]string{"tree", "--tree", "host", "--cpus", "4"}, []string{"--cpus", "does not apply"}},
		{[]string{"tree", "--tree", "host:"}, []string{`"--tree"`, "host:DIR"}},
		{[]string{"tree", "--tree", "forest"}, []string{`"--tree"`, "synthetic"}},
		{[]string{"tree", "--frobnicate"}, []string{"unknown flag: --frobnicate", "kernfsim tree --help"}},
		{[]string{"tree", "extra"}, []string{`"extra"`}},
		{[]string{"nosuchcommand"}, []string{`unknown command "nosuchcommand"`}},
	}
	for _, tt := range tests {
		code, out, errOut := runArgs(context.Background(), tt.args...)
		if code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tt.args, code, cli.ExitUsage, errOut)
		}
		if out != "" {
			t.Errorf("%q: wrote %d bytes to stdout, want none", tt.args, len(out))
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: stderr %q lacks %q", tt.args, errOut, w)
			}
		}
	}
}

func TestFlagsAnywhere(t *testing.T) {
	// Flags may come before or after the subcommand, in any order.
	_, want, _ := runArgs(context.Background(), append([]string{"tree"}, smallTree...)...)
	for _, args := range [][]string{
		append(append([]string{}, smallTree[4:]...), append([]string{"tree"}, smallTree[:4]...)...),
		{"tree", "--disks=1", "--netdevs=1", "--mem-blocks=2", "--threads-per-core=1", "--sockets=1", "--cpus=2"},
	} {
		if code, out, errOut := runArgs(context.Background(), args...); code != cli.ExitOK || out != want {
			t.Errorf("%q: exit %d, stderr %q, same output as in order: %v", args, code, errOut, out == want)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := runArgs(context.Background(), "--version")
	if code != cli.ExitOK || !strings.HasPrefix(out, "kernfsim ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	for _, sub := range []string{"tree", "cpuinfo"} {
		code, out, _ = runArgs(context.Background(), sub, "--help")
		for _, w := range []string{"Examples:", "kernfsim " + sub, "--cpus int", "--numa-nodes"} {
			if code != cli.ExitOK || !strings.Contains(out, w) {
				t.Errorf("%s --help: exit %d, output lacks %q", sub, code, w)
			}
		}
		for _, w := range []string{"--lock", "--gp", "--rcu-normal", "--expedite-cost", ") (default"} {
			if strings.Contains(out, w) {
				t.Errorf("%s --help lists %q, which changes nothing it prints, or a default twice", sub, w)
			}
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, errOut := runArgs(ctx, "tree", "--cpus", "2", "--sockets", "1")
	if code != cli.ExitRuntime || !strings.Contains(errOut, "interrupted") {
		t.Errorf("cancelled: exit %d, stderr %q; want %d, interrupted", code, errOut, cli.ExitRuntime)
	}
	var errOut2 bytes.Buffer
	code = run(context.Background(), []string{"tree"}, failWriter{}, &errOut2)
	if code != cli.ExitRuntime || !strings.Contains(errOut2.String(), "disk full") {
		t.Errorf("failed write: exit %d, stderr %q; want %d", code, errOut2.String(), cli.ExitRuntime)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
