package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/cli"
)

// TestSimHostABIConflict: a directory to mirror that has a file where the
// tree adds its in-tree ABI is bad input (exit 2) naming the file, not a
// panic.
func TestSimHostABIConflict(t *testing.T) {
	for _, name := range []string{"bus", "devices", "class"} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o644))
		for _, args := range [][]string{
			{"--sim", "--tree", "host:" + dir, "--threads", "1", "--times", "1"},
			{"compare", "--sim", "--tree", "host:" + dir, "--locks", "rwsem", "--threads", "1", "--repeats", "1", "--ops", "files"},
		} {
			code, out, errOut := runArgs(context.Background(), args...)
			want := "remove or rename " + filepath.Join(dir, name)
			if code != cli.ExitUsage || strings.Contains(errOut, "internal error") || !strings.Contains(errOut, want) {
				t.Errorf("%s: exit %d, stderr %q (stdout %q): want exit 2 and %q", name, code, errOut, out, want)
			}
		}
	}
}

// TestSimTreeMemoryLimit: a --sim tree too big for the memory available is
// refused before it is built.
func TestSimTreeMemoryLimit(t *testing.T) {
	defer func(f func() int64) { cli.MemAvailable = f }(cli.MemAvailable)
	cli.MemAvailable = func() int64 { return 48 << 20 }
	for _, args := range [][]string{
		{"--sim", "--mem-blocks", "20000", "--threads", "1", "--times", "1"},
		{"compare", "--sim", "--mem-blocks", "20000", "--locks", "rwsem", "--threads", "1", "--repeats", "1", "--ops", "files"},
		{"teardown", "--sim", "--mem-blocks", "20000", "--count", "1"},
	} {
		code, out, errOut := runArgs(context.Background(), args...)
		want := "invalid value 20000 for --mem-blocks: the tree would take about 35 MiB, more than half (24 MiB) of the 48 MiB of memory available; at most --mem-blocks 12895 fits"
		if code != cli.ExitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%q: exit %d, stderr %q (stdout %d bytes): want exit 2 and %q", args, code, errOut, len(out), want)
		}
	}
}
