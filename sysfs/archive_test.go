package sysfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// synth448 is a 448-CPU machine with few devices and memory blocks: its
// CPUs are most of its 30,000 nodes.
var synth448 = SynthConfig{CPUs: 448, Sockets: 4, ThreadsPerCore: 2, MemBlocks: 8, Netdevs: 1, Disks: 1}.WithDefaults()

// TestLoadArchiveRoundTrip448 writes a synthetic 448-CPU tree to a tar
// under each layout (uncompressed) and in each compression (in
// hwloc-gather-topology's layout), loads it back, and walks both: the
// same nodes, modes, owners, contents and targets.
func TestLoadArchiveRoundTrip448(t *testing.T) {
	src := testtree.New(t, "rwsem")
	require.NoError(t, BuildSynthetic(src, synth448))
	src.Freeze(true) // dynamic attributes repeat what the archive saved
	want := dumpTree(t, src)
	for _, layout := range []string{"mach/sys/", "sys/", ""} {
		raw := treeToTar(t, src, layout)
		for _, c := range compressions {
			if layout != "mach/sys/" && c != "none" {
				continue // each layout once, each compression once: the load is the same
			}
			t.Run("layout="+layout+"/compression="+c, func(t *testing.T) {
				tr, rep, err := loadTar(t, "rwsem", compress(t, raw, c), ArchiveOptions{})
				require.NoError(t, err)
				if rep.Compression != c {
					t.Errorf("got compression %q, want %q", rep.Compression, c)
				}
				if got := dumpTree(t, tr); got != want {
					t.Errorf("the tree loaded differs from the tree saved:\n%s", firstDiff(got, want))
				}
			})
		}
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + itoa(i+1) + ":\ngot  " + g[i] + "\nwant " + w[i]
		}
	}
	return "got " + itoa(len(g)) + " lines, want " + itoa(len(w))
}

// gather runs hwloc-gather-topology on this machine into dir and returns
// the archive's path.
func gather(t testing.TB, dir string) string {
	t.Helper()
	tool := testkit.RequireTool(t, "hwloc-gather-topology")
	testkit.RequireTool(t, "bzip2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, filepath.Join(dir, "mach")).CombinedOutput()
	require.NoError(t, err, "hwloc-gather-topology: %s", out)
	return filepath.Join(dir, "mach.tar.bz2")
}

// unpack extracts archive under a fresh directory with tar, keeping
// modes, and returns the directory.
func unpack(t testing.TB, archive string) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testkit.RequireTool(t, "tar"), "-x", "-p", "-f", archive, "-C", dir).CombinedOutput()
	require.NoError(t, err, "tar -x: %s", out)
	return dir
}

// TestLoadArchiveHwlocGather serves what hwloc-gather-topology saves of
// this machine, and checks the tree is the host mirror of the same
// archive unpacked, node for node.
func TestLoadArchiveHwlocGather(t *testing.T) {
	archive := gather(t, t.TempDir())
	sys := filepath.Join(unpack(t, archive), "mach", "sys")
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr := testtree.New(t, lock)
		rep, err := LoadArchive(tr, archive, ArchiveOptions{})
		require.NoError(t, err)
		if rep.Compression != "bzip2" || rep.Root != "mach/sys" || rep.Outside == 0 || rep.Attrs == 0 || rep.Symlinks == 0 {
			t.Errorf("got report %+v, want bzip2, root mach/sys, proc/ outside, attributes and symlinks", rep)
		}
		mirror, _ := mirrorTest(t, lock, sys, MirrorOptions{NoRead: []string{}})
		if got, want := dumpTree(t, tr), dumpTree(t, mirror); got != want {
			t.Errorf("the archive's tree differs from the mirror of it unpacked:\n%s", firstDiff(got, want))
		}
	})
}

// TestLoadArchiveLayouts checks the layouts accepted and what each entry
// becomes.
func TestLoadArchiveLayouts(t *testing.T) {
	big := strings.Repeat("x", kernfsim.PageSize+10)
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		root    string
		want    string
		outside int
	}{
		{"hwloc", []tarEntry{
			{name: "m/", typ: tar.TypeDir},
			{name: "m/proc/cpuinfo", data: "processor: 0\n"},
			{name: "m/sys/", typ: tar.TypeDir, mode: 0o555},
			{name: "m/sys/devices/system/cpu/online", mode: 0o444, data: "0\n"},
			{name: "m/sys/bus/cpu/devices/cpu0", typ: tar.TypeSymlink, target: "../../../devices/system/cpu/cpu0"},
		}, "m/sys", `root 0555 0:0
dir 0755 0:0 bus
dir 0755 0:0 bus/cpu
dir 0755 0:0 bus/cpu/devices
symlink 0777 0:0 bus/cpu/devices/cpu0 -> ../../../devices/system/cpu/cpu0
dir 0755 0:0 devices
dir 0755 0:0 devices/system
dir 0755 0:0 devices/system/cpu
attr 0444 0:0 devices/system/cpu/online "0\n" <nil>
`, 2},
		{"sys", []tarEntry{
			{name: "sys/kernel/", typ: tar.TypeDir, mode: 0o700, uid: 7},
			{name: "sys/kernel/rw", mode: 0o644, data: "1\n"},
			{name: "sys/kernel/wo", mode: 0o200},
			{name: "sys/kernel/none", mode: 0o4000, data: "secret"}, // setuid, as the mirror, dropped
			{name: "sys/kernel/big", mode: 0o400, data: big},
			{name: "sys/kernel/hard", typ: tar.TypeLink, mode: 0o444, target: "sys/kernel/rw"},
		}, "sys", `root 0755 0:0
dir 0700 7:0 kernel
attr 0400 0:0 kernel/big ` + short(big[:kernfsim.PageSize]) + ` <nil>
attr 0444 0:0 kernel/hard "1\n" <nil>
attr 0000 0:0 kernel/none "" permission denied
attr 0644 0:0 kernel/rw "1\n" <nil>
attr 0200 0:0 kernel/wo "" permission denied
`, 0},
		{"plain", []tarEntry{
			{name: "./", typ: tar.TypeDir, mode: 0o555},
			{name: "./devices/", typ: tar.TypeDir},
			{name: "./.hidden", data: "h"},
			{name: "class/x", typ: tar.TypeSymlink, target: "../devices"},
		}, ".", `root 0555 0:0
attr 0444 0:0 .hidden "h" <nil>
dir 0755 0:0 class
symlink 0777 0:0 class/x -> ../devices
dir 0755 0:0 devices
`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []string{"none", "xz"} {
				tr, rep, err := loadTar(t, "rcu", compress(t, makeTar(t, tc.entries), c), ArchiveOptions{})
				require.NoError(t, err)
				if rep.Root != tc.root || rep.Outside != tc.outside {
					t.Errorf("got root %q, %d outside; want %q, %d", rep.Root, rep.Outside, tc.root, tc.outside)
				}
				if got := dumpTree(t, tr); got != tc.want {
					t.Errorf("got tree\n%s\nwant\n%s", got, tc.want)
				}
			}
		})
	}
}

// TestLoadArchiveReport checks the counts, the implicit directories and
// the attributes cut.
func TestLoadArchiveReport(t *testing.T) {
	data := makeTar(t, []tarEntry{
		{name: "sys/a/b/c", data: strings.Repeat("y", kernfsim.PageSize+1)},
		{name: "sys/a/padded", data: "1\n", size: kernfsim.PageSize}, // as GNU tar saves a live sysfs attribute
		{name: "sys/a/l", typ: tar.TypeSymlink, target: "b/c"},
		{name: "sys/a/", typ: tar.TypeDir},
	})
	_, rep, err := loadTar(t, "mutex", data, ArchiveOptions{})
	require.NoError(t, err)
	got := []any{rep.Dirs, rep.Attrs, rep.Symlinks, rep.ImplicitDirs, rep.Bytes, rep.Truncated, rep.Padded}
	want := []any{2, 2, 1, 1, int64(2 * kernfsim.PageSize), []string{"a/b/c"}, 1}
	require.Equal(t, want, got, "dirs, attrs, symlinks, implicit dirs, bytes, truncated, padded")
	require.Contains(t, rep.String(), "1 attributes longer than 4096 bytes were cut: a/b/c")
	require.Contains(t, rep.String(), "1 attributes are 4096 bytes ending in zeros")
}

// TestLoadArchiveRefuses checks each archive refused and its message.
func TestLoadArchiveRefuses(t *testing.T) {
	good := makeTar(t, []tarEntry{{name: "sys/devices/a", data: "1\n"}, {name: "sys/devices/b", data: "2\n"}})
	for _, tc := range []struct {
		name string
		data []byte
		opts ArchiveOptions
		want string
	}{
		{"absolute", makeTar(t, []tarEntry{{name: "/sys/devices/a", data: "1"}}), ArchiveOptions{},
			`test.tar: entry "/sys/devices/a": has an absolute path; make the archive with relative names (tar -C / -c sys, or hwloc-gather-topology)`},
		{"dotdot", makeTar(t, []tarEntry{{name: "sys/../../etc/passwd", data: "1"}}), ArchiveOptions{},
			`test.tar: entry "sys/../../etc/passwd": has ".." in its path, which points out of the archive; make the archive with plain relative names`},
		{"link-out", makeTar(t, []tarEntry{{name: "sys/class/x", typ: tar.TypeSymlink, target: "../../etc"}}), ArchiveOptions{},
			`test.tar: entry "sys/class/x": is a symlink to "../../etc", which points out of the tree; make the archive again from /sys, or remove the link`},
		{"link-absolute", makeTar(t, []tarEntry{{name: "sys/class/x", typ: tar.TypeSymlink, target: "/etc"}}), ArchiveOptions{},
			`test.tar: entry "sys/class/x": is a symlink to "/etc", out of the tree: sysfs links are relative; make the archive again from /sys, or remove the link`},
		{"hard-link-missing", makeTar(t, []tarEntry{{name: "sys/a", typ: tar.TypeLink, target: "sys/b"}}), ArchiveOptions{},
			`test.tar: entry "sys/a": is a hard link to "sys/b", which is not a regular file before it in the archive; ` + fixRemake},
		{"char-device", makeTar(t, []tarEntry{{name: "sys/dev/null", typ: tar.TypeChar}}), ArchiveOptions{},
			`test.tar: entry "sys/dev/null": is a device file or FIFO, which a sysfs never holds; remove it from the archive (tar --delete) or make it again from /sys only`},
		{"block-device", makeTar(t, []tarEntry{{name: "sys/dev/sda", typ: tar.TypeBlock}}), ArchiveOptions{},
			`test.tar: entry "sys/dev/sda": is a device file or FIFO, which a sysfs never holds; remove it from the archive (tar --delete) or make it again from /sys only`},
		{"fifo", makeTar(t, []tarEntry{{name: "sys/fifo", typ: tar.TypeFifo}}), ArchiveOptions{},
			`test.tar: entry "sys/fifo": is a device file or FIFO, which a sysfs never holds; remove it from the archive (tar --delete) or make it again from /sys only`},
		{"attr-too-big", makeTar(t, []tarEntry{{name: "sys/huge", size: DefaultArchiveMaxAttrSize + 1}}), ArchiveOptions{},
			`test.tar: entry "sys/huge": is 1048577 bytes, more than 1048576: no sysfs attribute is that big; remove it from the archive, or make the archive again from /sys`},
		{"total-too-big", good, ArchiveOptions{MaxSize: 1024},
			`test.tar: holds more than 1024 bytes uncompressed, more than any sysfs; if it is a sysfs, raise the bound (ArchiveOptions.MaxSize)`},
		{"gzip-too-big", compress(t, good, "gzip"), ArchiveOptions{MaxSize: 1024},
			`test.tar: holds more than 1024 bytes uncompressed, more than any sysfs; if it is a sysfs, raise the bound (ArchiveOptions.MaxSize)`},
		{"bzip2-too-big", compress(t, good, "bzip2"), ArchiveOptions{MaxSize: 1024},
			`test.tar: holds more than 1024 bytes uncompressed, more than any sysfs; if it is a sysfs, raise the bound (ArchiveOptions.MaxSize)`},
		{"cut-in-entry", good[:512+1], ArchiveOptions{},
			`test.tar: cannot be read in entry "sys/devices/a" (unexpected EOF); ` + fixCorrupt},
		{"cut-at-entry", good[:4*512], ArchiveOptions{},
			`test.tar: ends without tar's end-of-archive blocks after entry "sys/devices/b"; ` + fixCorrupt},
		{"gzip-cut", cut(compress(t, good, "gzip"), 8), ArchiveOptions{},
			`test.tar: cannot be read after entry "sys/devices/b" (unexpected EOF); ` + fixCorrupt},
		{"gzip-corrupt", flipLast(compress(t, good, "gzip"), 5), ArchiveOptions{},
			`test.tar: cannot be read after entry "sys/devices/b" (gzip: invalid checksum); ` + fixCorrupt},
		{"xz-cut", cut(compress(t, good, "xz"), 12), ArchiveOptions{},
			`test.tar: cannot be read after entry "sys/devices/b" (unexpected EOF); ` + fixCorrupt},
		{"bzip2-cut", cut(compress(t, good, "bzip2"), 8), ArchiveOptions{},
			`test.tar: cannot be read after entry "sys/devices/b" (unexpected EOF); ` + fixCorrupt},
		{"bzip2-corrupt", flipLast(compress(t, good, "bzip2"), 20), ArchiveOptions{},
			`test.tar: is not a tar archive, or is damaged at its start (archive/tar: invalid tar header); ` + fixCorrupt},
		{"not-tar", []byte("hello, world\n"), ArchiveOptions{},
			`test.tar: is not a tar archive, or is damaged at its start (unexpected EOF); ` + fixCorrupt},
		{"empty", nil, ArchiveOptions{}, `test.tar: is empty; ` + fixRemake},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0}, ArchiveOptions{},
			`test.tar: compressed with zstd, which kernfsim does not read; decompress it, or recompress it with xz, bzip2 or gzip`},
		{"no-sys", makeTar(t, []tarEntry{{name: "home/me/notes", data: "x"}, {name: "etc/", typ: tar.TypeDir}}), ArchiveOptions{},
			`test.tar: holds no sys/ directory: neither DIR/sys/ (hwloc-gather-topology's layout), sys/, nor /sys's own top directories (devices/, bus/, class/ ...); its top holds etc, home; give an archive of a /sys: hwloc-gather-topology FILE, or tar -C / -c sys`},
		{"twice", makeTar(t, []tarEntry{{name: "sys/a", data: "1"}, {name: "sys/a", data: "2"}}), ArchiveOptions{},
			`test.tar: entry "sys/a": appears twice in the archive; keep one copy (tar --delete removes all copies of a name; make the archive again)`},
		{"file-as-dir", makeTar(t, []tarEntry{{name: "sys/a", data: "1"}, {name: "sys/a/b", data: "2"}}), ArchiveOptions{},
			`test.tar: entry "sys/a/b": is below an entry that is not a directory; ` + fixRemake},
		{"bad-name", makeTar(t, []tarEntry{{name: "sys/a\x01b", data: "1"}}), ArchiveOptions{},
			`test.tar: entry "sys/a\x01b": has a name a sysfs cannot hold (EINVAL); rename or remove it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadTar(t, "rwsem", tc.data, tc.opts)
			var ae *ArchiveError
			if !errors.As(err, &ae) {
				t.Fatalf("got error %v, want an *ArchiveError", err)
			}
			if err.Error() != tc.want {
				t.Errorf("got error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

// cut is data without its last n bytes.
func cut(data []byte, n int) []byte { return data[:len(data)-n] }

// flipLast flips a byte back from the end: in gzip, the CRC-32.
func flipLast(data []byte, back int) []byte {
	data = bytes.Clone(data)
	data[len(data)-back] ^= 0xff
	return data
}

// TestLoadArchiveFile checks LoadArchive on a file whose name says
// another compression than its bytes, and on a missing file.
func TestLoadArchiveFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saved.tar.gz")
	require.NoError(t, os.WriteFile(path, compress(t, makeTar(t, []tarEntry{{name: "sys/devices/a", data: "1"}}), "xz"), 0o644))
	rep, err := LoadArchive(testtree.New(t, "rwsem"), path, ArchiveOptions{})
	require.NoError(t, err)
	if rep.Compression != "xz" || rep.Attrs != 1 {
		t.Errorf("got %+v, want xz and one attribute", rep)
	}
	_, err = LoadArchive(testtree.New(t, "rwsem"), path+".missing", ArchiveOptions{})
	if want := path + ".missing: cannot open it (no such file or directory)"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestAssembleArchive: Assemble serves an archive with the in-tree ABI,
// and refuses one that is bad, or that holds a file where the ABI goes,
// with an *OptionError for Archive naming what to do.
func TestAssembleArchive(t *testing.T) {
	write := func(entries []tarEntry) string {
		path := filepath.Join(t.TempDir(), "saved.tar")
		require.NoError(t, os.WriteFile(path, makeTar(t, entries), 0o644))
		return path
	}
	good := write([]tarEntry{{name: "sys/devices/system/cpu/online", data: "0\n"}})
	a := testkit.Must(Assemble(Options{Lock: "rcu", Archive: good, ABI: true}))(t)
	if a.Archive == nil || a.Mirror != nil || a.ABI == nil || a.Archive.Attrs != 1 {
		t.Fatalf("got archive report %v, mirror %v, ABI %v", a.Archive, a.Mirror, a.ABI)
	}
	w := kernfsim.NewWalker(a.Tree, kernfsim.WalkerOptions{})
	for _, p := range []string{"devices/system/cpu/online", "bus/kernfsim/new_device"} {
		testkit.Must(w.Resolve(kernfsim.RootCred, p))(t)
	}
	conflict := write([]tarEntry{{name: "sys/bus", data: "x"}})
	for _, c := range []struct{ file, want string }{
		{conflict, conflict + ": bus is a file, where the in-tree ABI needs a directory for bus/kernfsim/new_device: delete bus from the archive, or serve an archive without it"},
		{write([]tarEntry{{name: "/sys/bus", data: "x"}}), `saved.tar: entry "/sys/bus": has an absolute path`},
	} {
		_, err := Assemble(Options{Lock: "rwsem", Archive: c.file, ABI: true})
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != "Archive" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an OptionError for Archive saying %q", err, c.want)
		}
	}
}
