package sysfs

import (
	"archive/tar"
	"bytes"
	"errors"
	"testing"

	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
)

// FuzzArchive loads fuzzed archives: LoadArchiveFrom never panics, fails
// only with an *ArchiveError, and a tree it loads holds what its report
// counts.
func FuzzArchive(f *testing.F) {
	small := makeTar(f, []tarEntry{
		{name: "m/", typ: tar.TypeDir},
		{name: "m/proc/cpuinfo", data: "processor: 0\n"},
		{name: "m/sys/devices/system/cpu/online", data: "0\n"},
		{name: "m/sys/devices/system/cpu/cpu0/online", mode: 0o644, data: "1\n"},
		{name: "m/sys/bus/cpu/devices/cpu0", typ: tar.TypeSymlink, target: "../../../devices/system/cpu/cpu0"},
		{name: "m/sys/devices/hard", typ: tar.TypeLink, target: "m/sys/devices/system/cpu/online"},
	})
	for _, c := range []string{"none", "gzip", "xz"} {
		f.Add(compress(f, small, c))
	}
	f.Add(makeTar(f, []tarEntry{{name: "./devices/a", data: "1"}, {name: "class/x", typ: tar.TypeSymlink, target: "../devices/a"}}))
	f.Add(makeTar(f, []tarEntry{{name: "sys/a", typ: tar.TypeSymlink, target: "../../x"}}))
	f.Add(makeTar(f, []tarEntry{{name: "sys/a", data: "1"}, {name: "sys/a/b", data: "2"}}))
	f.Add(small[:700])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := testtree.New(t, "rwsem")
		rep, err := LoadArchiveFrom(tr, "fuzz.tar", bytes.NewReader(data), ArchiveOptions{MaxSize: 1 << 20})
		var ae *ArchiveError
		switch {
		case err != nil && !errors.As(err, &ae):
			t.Fatalf("got error %v (%T), want an *ArchiveError", err, err)
		case err != nil:
			return
		}
		if n := int64(rep.Dirs + rep.Attrs + rep.Symlinks + 1); tr.Nodes() != n {
			t.Errorf("the tree has %d nodes, the report counts %d: %+v", tr.Nodes(), n, rep)
		}
		dumpTree(t, tr)
	})
}
