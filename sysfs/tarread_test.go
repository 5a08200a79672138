package sysfs

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// tarLog reads an archive with next and read (tar.Reader's or
// tarReader's) as readEntries does, and logs what it gives: each header's
// fields LoadArchive uses, up to 5000 bytes of data (read in pieces of
// odd sizes), and the error that ends it.
func tarLog(next func() (*tar.Header, error), read func([]byte) (int, error)) string {
	var b strings.Builder
	buf := make([]byte, 777)
	for i := 0; ; i++ {
		h, err := next()
		if err != nil {
			fmt.Fprintf(&b, "end: %v\n", err)
			return b.String()
		}
		fmt.Fprintf(&b, "%q %q %c %o %d:%d %d\n", h.Name, h.Linkname, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Size)
		if i%3 == 2 {
			continue // left unread: the next header skips it
		}
		for total := 0; total < 5000; {
			n, err := read(buf[:1+(total*7)%len(buf)])
			total += n
			fmt.Fprintf(&b, "  %q %v\n", buf[:n], err)
			if err != nil {
				break
			}
		}
	}
}

// requireSameTar checks tarReader reads data as archive/tar does.
func requireSameTar(t testing.TB, data []byte) {
	t.Helper()
	want := tar.NewReader(bytes.NewReader(data))
	got := newTarReader(bytes.NewReader(data))
	w, g := tarLog(want.Next, want.Read), tarLog(got.Next, got.Read)
	if g != w {
		t.Fatalf("tarReader differs from archive/tar:\n%s", firstDiff(g, w))
	}
}

// gnuTar is an archive the tar command makes of a directory holding
// names longer than 100 bytes (GNU long names), links, a file with a
// hole (a sparse entry if sparse), and the rest.
func gnuTar(t testing.TB, format string, sparse bool) []byte {
	t.Helper()
	tool := testkit.RequireTool(t, "tar")
	dir := t.TempDir()
	deep := filepath.Join(dir, "sys", strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.NoError(t, os.MkdirAll(deep, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(deep, "attr"), []byte("1\n"), 0o444))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sys", "big"), bytes.Repeat([]byte("x"), 3000), 0o644))
	require.NoError(t, os.Symlink("big", filepath.Join(dir, "sys", "link")))
	require.NoError(t, os.Link(filepath.Join(dir, "sys", "big"), filepath.Join(dir, "sys", "hard")))
	holed, err := os.Create(filepath.Join(dir, "sys", "sparse"))
	require.NoError(t, err)
	_, err = holed.WriteAt([]byte("end\n"), 64<<10) // a hole, then data: a sparse entry with -S
	require.NoError(t, err)
	require.NoError(t, holed.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sys", "zafter"), []byte("after the sparse file\n"), 0o444))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var buf bytes.Buffer
	args := []string{"-C", dir, "--format", format, "-c", "sys"}
	if sparse {
		args = append(args, "-S")
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdout = &buf
	require.NoError(t, cmd.Run())
	return buf.Bytes()
}

// tarSeeds are archives of every kind the tests make: Go's writer, GNU
// tar's formats, cut and damaged ones.
func tarSeeds(t testing.TB) [][]byte {
	good := makeTar(t, []tarEntry{
		{name: "m/", typ: tar.TypeDir},
		{name: "m/sys/devices/system/cpu/online", data: "0-3\n"},
		{name: "m/sys/bus/cpu/devices/cpu0", typ: tar.TypeSymlink, target: "../../../devices/system/cpu/cpu0"},
		{name: "m/sys/devices/hard", typ: tar.TypeLink, target: "m/sys/devices/system/cpu/online"},
		{name: "m/sys/" + strings.Repeat("p", 120) + "/x", data: "long\n"}, // ustar prefix
		{name: "m/sys/" + strings.Repeat("q", 200), data: "pax\n"},         // PAX record
		{name: "m/sys/big", data: strings.Repeat("y", 1500)},
	})
	seeds := [][]byte{good, good[:512*3+100], good[:512*5], good[:len(good)-1000], nil, make([]byte, 1024), make([]byte, 512)}
	bad := bytes.Clone(good)
	bad[124] = '9' // a size not in octal
	seeds = append(seeds, bad)
	for _, f := range []string{"gnu", "oldgnu", "ustar", "posix"} {
		seeds = append(seeds, gnuTar(t, f, false))
	}
	seeds = append(seeds, gnuTar(t, "gnu", true), gnuTar(t, "posix", true))
	return seeds
}

// TestTarReader: tarReader gives what archive/tar gives on the archives
// of tarSeeds.
func TestTarReader(t *testing.T) {
	for i, data := range tarSeeds(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) { requireSameTar(t, data) })
	}
}

// FuzzTarReader: on any input, tarReader gives the headers, data and
// errors archive/tar gives.
func FuzzTarReader(f *testing.F) {
	for _, s := range tarSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { requireSameTar(t, data) })
}

// TestTarChecksum: checksum is the plain sum, its field as spaces.
func TestTarChecksum(t *testing.T) {
	var b [512]byte
	for seed := range 4 {
		var want int64
		for i := range b {
			b[i] = byte(i*131 + seed*255)
			if seed == 3 {
				b[i] = 0xff
			}
			if i >= 148 && i < 156 {
				want += ' '
			} else {
				want += int64(b[i])
			}
		}
		if got := checksum(&b); got != want {
			t.Errorf("seed %d: got %d, want %d", seed, got, want)
		}
	}
}
