package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/goldenfile"
)

// abiConflicts are host directories with an entry where the tree adds its
// in-tree ABI: a file, or a symlink, where the ABI needs a directory, or
// the ABI's own file.
var abiConflicts = []struct {
	name string
	make func(dir string) error
	path string // the conflicting entry, below the directory
}{
	{"bus", func(d string) error { return os.WriteFile(filepath.Join(d, "bus"), []byte("x\n"), 0o644) }, "bus"},
	{"devices", func(d string) error { return os.WriteFile(filepath.Join(d, "devices"), nil, 0o644) }, "devices"},
	{"class", func(d string) error { return os.Symlink("nowhere", filepath.Join(d, "class")) }, "class"},
	{"stats", func(d string) error {
		if err := os.MkdirAll(filepath.Join(d, "kernel", "kernfsim"), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(d, "kernel", "kernfsim", "stats"), nil, 0o444)
	}, "kernel/kernfsim/stats"},
}

// TestHostABIConflict: every command that builds a tree refuses such a
// directory with exit 2, naming the entry and what to do.
func TestHostABIConflict(t *testing.T) {
	var golden strings.Builder
	for _, c := range abiConflicts {
		dir := t.TempDir()
		if err := c.make(dir); err != nil {
			t.Fatal(err)
		}
		tree := "--tree=host:" + dir
		for _, args := range [][]string{{"tree", tree}, {"cpuinfo", tree}, {"mount", t.TempDir(), tree}} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // should a mount start, it ends
			code, out, errOut := runArgs(ctx, args...)
			cancel()
			if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, "remove or rename "+filepath.Join(dir, c.path)) {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q: want exit 2 naming %s", args[0], c.name, code, out, errOut, c.path)
			}
			if args[0] == "tree" {
				golden.WriteString("$ kernfsim tree --tree host:DIR  # " + c.name + "\n" + strings.ReplaceAll(errOut, dir, "DIR"))
			}
		}
	}
	goldenfile.Check(t, "host_abi_conflict.golden", golden.String())
}

// TestTreeMemoryLimit: a tree that would take more than half the memory
// available is refused before it is built, naming the flag and what fits.
func TestTreeMemoryLimit(t *testing.T) {
	defer func(f func() int64) { cli.MemAvailable = f }(cli.MemAvailable)
	cli.MemAvailable = func() int64 { return 48 << 20 }
	for _, args := range [][]string{
		{"tree", "--mem-blocks", "20000"},
		{"cpuinfo", "--mem-blocks", "20000"},
		{"mount", t.TempDir(), "--mem-blocks", "20000"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, out, errOut := runArgs(ctx, args...)
		cancel()
		want := "invalid value 20000 for --mem-blocks: the tree would take about 35 MiB, more than half (24 MiB) of the 48 MiB of memory available; at most --mem-blocks 12895 fits"
		if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q: want exit 2 and %q", args, code, len(out), errOut, want)
		}
	}
	if code, _, errOut := runArgs(context.Background(), "tree", "--mem-blocks", "12895"); code != cli.ExitOK {
		t.Errorf("--mem-blocks 12895, said to fit: exit %d, stderr %q", code, errOut)
	}
}

// TestEmptyMountpoint: an empty MOUNTPOINT is refused, not taken for the
// current directory (a temporary one here, should a mount start).
func TestEmptyMountpoint(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", ""}, "kernfsim mount /mnt/k"},
		{[]string{"mount", "", "--lock", "rcu"}, "kernfsim mount /mnt/k"},
		{[]string{"stats", ""}, "kernfsim stats /mnt/k"},
		{[]string{"stats", "", "--watch", "1s"}, "kernfsim stats /mnt/k"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code, out, errOut := runArgs(ctx, c.args...)
		cancel()
		if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, `MOUNTPOINT is empty ("")`) || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q: want exit 2 naming the empty MOUNTPOINT", c.args, code, out, errOut)
		}
	}
}
