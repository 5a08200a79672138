package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/cli"
)

// writeArchive writes a gzip-compressed tar of files (name: contents; a
// name ending in "/" is a directory, contents starting with "->" a
// symlink) and returns its path.
func writeArchive(t *testing.T, files [][2]string) string {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	tw := tar.NewWriter(z)
	for _, f := range files {
		h := &tar.Header{Name: f[0], Mode: 0o444, Size: int64(len(f[1])), Typeflag: tar.TypeReg}
		switch {
		case strings.HasSuffix(f[0], "/"):
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case strings.HasPrefix(f[1], "->"):
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f[1][2:], 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(f[1])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "saved.tar.bz2") // the name does not say the compression: the bytes do
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTreeArchive: kernfsim tree prints an archive's tree, the in-tree
// ABI added, as it prints a mirror.
func TestTreeArchive(t *testing.T) {
	path := writeArchive(t, [][2]string{
		{"mach/", ""}, {"mach/proc/cpuinfo", "processor\t: 0\n"},
		{"mach/sys/devices/system/cpu/online", "0\n"},
		{"mach/sys/bus/cpu/devices/cpu0", "->../../../devices/system/cpu/cpu0"},
	})
	code, out, errOut := runArgs(context.Background(), "tree", "--tree", "archive:"+path)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"f 0444 devices/system/cpu/online\n",
		"l 0777 bus/cpu/devices/cpu0 -> ../../../devices/system/cpu/cpu0\n",
		"f 0200 bus/kernfsim/new_device\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kernfsim tree --tree archive: no line %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "cpuinfo") {
		t.Errorf("kernfsim tree --tree archive: proc/ served:\n%s", out)
	}
}

// TestTreeArchiveRefused: a bad archive, a missing file, a directory and
// a synthetic size flag exit 2 with what is wrong and what to do, from
// every command that builds a tree.
func TestTreeArchiveRefused(t *testing.T) {
	bad := writeArchive(t, [][2]string{{"sys/class/net/eth0", "->../../../../etc"}})
	dir := t.TempDir()
	for _, c := range []struct {
		tree  string
		extra []string
		want  string
	}{
		{"archive:" + bad, nil, "kernfsim: --tree archive:" + bad + `: entry "sys/class/net/eth0": is a symlink to "../../../../etc", which points out of the tree; make the archive again from /sys, or remove the link` + "\n"},
		{"archive:" + bad + ".missing", nil, "kernfsim: invalid value for --tree: archive:" + bad + ".missing cannot be read (stat " + bad + ".missing: no such file or directory)\n"},
		{"archive:" + dir, nil, "kernfsim: invalid value for --tree: archive:" + dir + " is not a regular file (a directory is served with --tree host:DIR)\n"},
		{"archive:" + bad, []string{"--cpus", "8"}, "kernfsim: --cpus sizes a synthetic tree; it does not apply to --tree archive\n"},
	} {
		for _, args := range [][]string{{"tree"}, {"cpuinfo"}, {"mount", t.TempDir()}} {
			args = append(append(args, "--tree", c.tree), c.extra...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // should a mount start, it ends
			code, out, errOut := runArgs(ctx, args...)
			cancel()
			if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errOut, c.want) {
				t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant exit 2, stderr\n%s", args, code, out, errOut, c.want)
			}
		}
	}
}
