package sysfs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// compressions are the compressions LoadArchive reads.
var compressions = []string{"none", "gzip", "bzip2", "xz"}

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name   string
	typ    byte // tar.TypeReg if 0
	mode   int64
	uid    int
	data   string
	target string // symlinks and hard links
	size   int64  // the size the header gives, if not len(data)
}

// makeTar writes entries as a tar archive, ended as tar ends.
func makeTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Linkname: e.target, Size: e.size,
			ModTime: time.Unix(1e9, 0), Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 && h.Typeflag == tar.TypeReg {
			h.Mode = 0o444 // 0o4000 makes a file of mode 0
		}
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.data))
		}
		if h.Mode == 0 && h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := io.WriteString(tw, e.data)
			require.NoError(t, err)
			if pad := h.Size - int64(len(e.data)); pad > 0 {
				_, err := io.CopyN(tw, zeros{}, pad)
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// compress compresses raw as c says: gzip in Go, bzip2 with the bzip2
// command (the standard library only reads bzip2), xz with the xz
// command or, without one, in Go.
func compress(t testing.TB, raw []byte, c string) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch c {
	case "none":
		return raw
	case "gzip":
		z := gzip.NewWriter(&buf)
		_, err := z.Write(raw)
		require.NoError(t, err)
		require.NoError(t, z.Close())
	case "xz":
		if path, err := exec.LookPath("xz"); err == nil {
			return compressWith(t, raw, path) // xz-utils is much quicker than the Go writer, under -race above all
		}
		z, err := xz.NewWriter(&buf)
		require.NoError(t, err)
		_, err = z.Write(raw)
		require.NoError(t, err)
		require.NoError(t, z.Close())
	case "bzip2":
		return compressWith(t, raw, testkit.RequireTool(t, "bzip2"))
	default:
		t.Fatalf("no compression %q", c)
	}
	return buf.Bytes()
}

// compressWith compresses raw with a command (bzip2 or xz).
func compressWith(t testing.TB, raw []byte, tool string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, "-c")
	cmd.Stdin, cmd.Stdout = bytes.NewReader(raw), &buf
	require.NoError(t, cmd.Run())
	return buf.Bytes()
}

// loadTar loads archive bytes into a fresh tree under lock.
func loadTar(t testing.TB, lock string, data []byte, opts ArchiveOptions) (*kernfsim.Tree, ArchiveReport, error) {
	t.Helper()
	tr := testtree.New(t, lock)
	rep, err := LoadArchiveFrom(tr, "test.tar", bytes.NewReader(data), opts)
	return tr, rep, err
}

// dumpTree lists every node of tr below the root, depth first in name
// order: kind, mode, owner, path, and a symlink's target or what reading
// an attribute as root gives (its contents, or the errno).
func dumpTree(t testing.TB, tr *kernfsim.Tree) string {
	t.Helper()
	var b strings.Builder
	st := tr.Getattr(tr.Root())
	fmt.Fprintf(&b, "root %04o %d:%d\n", uint32(st.Mode), st.Uid, st.Gid)
	dumpDir(t, &b, tr, tr.Root(), "")
	return b.String()
}

func dumpDir(t testing.TB, b *strings.Builder, tr *kernfsim.Tree, dir *kernfsim.Node, path string) {
	var names []string
	require.NoError(t, tr.Readdir(dir, 0, func(d kernfsim.Dirent) bool { names = append(names, d.Name); return true }))
	slices.Sort(names)
	for _, name := range names {
		n := testkit.Must(tr.Lookup(dir, name))(t)
		st := tr.Getattr(n)
		fmt.Fprintf(b, "%v %04o %d:%d %s%s", n.Kind(), uint32(st.Mode), st.Uid, st.Gid, path, name)
		switch n.Kind() {
		case kernfsim.KindSymlink:
			fmt.Fprintf(b, " -> %s\n", n.Target())
		case kernfsim.KindAttr:
			data, errno := readNode(tr, n)
			fmt.Fprintf(b, " %s %v\n", short(data), errno)
		default:
			b.WriteString("\n")
			dumpDir(t, b, tr, n, path+name+"/")
		}
	}
}

// readNode reads an attribute as root: its contents, or the errno.
func readNode(tr *kernfsim.Tree, n *kernfsim.Node) (string, error) {
	f, err := tr.Open(n, os.O_RDONLY, kernfsim.RootCred)
	if err != nil {
		return "", kernfsim.Errno(err)
	}
	defer f.Release()
	var out []byte
	buf := make([]byte, kernfsim.PageSize)
	for off := int64(0); ; {
		k, err := f.Read(buf, off)
		if err == io.EOF {
			return string(out), nil
		}
		if err != nil {
			return "", kernfsim.Errno(err)
		}
		out, off = append(out, buf[:k]...), off+int64(k)
	}
}

// treeToTar writes tr as a tar under prefix ("sys/", "M/sys/" or ""),
// every node as the archive of a sysfs holds it; attributes hold what
// reading them as root gives (nothing if that fails).
func treeToTar(t testing.TB, tr *kernfsim.Tree, prefix string) []byte {
	t.Helper()
	st := tr.Getattr(tr.Root())
	var entries []tarEntry
	dir := ""
	for c := range strings.SplitSeq(strings.TrimSuffix(prefix, "/"), "/") {
		dir += c + "/"
		entries = append(entries, tarEntry{name: dir, typ: tar.TypeDir, mode: 0o755})
	}
	if prefix == "" {
		entries = []tarEntry{{name: "./", typ: tar.TypeDir}}
	}
	entries[len(entries)-1].mode, entries[len(entries)-1].uid = int64(st.Mode), int(st.Uid)
	return makeTar(t, treeEntries(t, tr, tr.Root(), prefix, entries))
}

func treeEntries(t testing.TB, tr *kernfsim.Tree, dir *kernfsim.Node, path string, out []tarEntry) []tarEntry {
	var names []string
	require.NoError(t, tr.Readdir(dir, 0, func(d kernfsim.Dirent) bool { names = append(names, d.Name); return true }))
	for _, name := range names {
		n := testkit.Must(tr.Lookup(dir, name))(t)
		st := tr.Getattr(n)
		e := tarEntry{name: path + name, mode: int64(st.Mode), uid: int(st.Uid)}
		switch n.Kind() {
		case kernfsim.KindDir:
			e.typ, e.name = tar.TypeDir, e.name+"/"
			out = treeEntries(t, tr, n, e.name, append(out, e))
			continue
		case kernfsim.KindSymlink:
			e.typ, e.target = tar.TypeSymlink, n.Target()
		default:
			e.data, _ = readNode(tr, n)
		}
		out = append(out, e)
	}
	return out
}

// short is data quoted, or its length and hash if it is long.
func short(data string) string {
	if len(data) <= 64 {
		return strconv.Quote(data)
	}
	h := fnv.New64a()
	h.Write([]byte(data))
	return fmt.Sprintf("%q...(%d bytes, fnv %x)", data[:16], len(data), h.Sum64())
}
