package sysfs

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// BenchmarkLoadArchive loads archives into trees, per compression:
// source=gathered is what hwloc-gather-topology saves of this machine
// (recompressed from its .tar.bz2; skipped without hwloc),
// source=synth448 the 448-CPU synthetic tree of
// TestLoadArchiveRoundTrip448 in hwloc-gather-topology's layout. It
// reports the time and live heap per entry served.
func BenchmarkLoadArchive(b *testing.B) {
	src := testtree.New(b, "rwsem")
	if err := BuildSynthetic(src, synth448); err != nil {
		b.Fatal(err)
	}
	src.Freeze(true)
	sources := map[string][]byte{"synth448": treeToTar(b, src, "mach/sys/")}
	if _, err := exec.LookPath("hwloc-gather-topology"); err == nil {
		sources["gathered"] = gatheredTar(b)
	}
	for _, name := range []string{"gathered", "synth448"} {
		raw := sources[name]
		if raw == nil {
			continue
		}
		for _, c := range compressions {
			data := compress(b, raw, c)
			b.Run("source="+name+"/compression="+c, func(b *testing.B) { benchLoad(b, data) })
		}
	}
}

// gatheredTar is hwloc-gather-topology's archive of this machine,
// uncompressed.
func gatheredTar(b *testing.B) []byte {
	archive := gather(b, b.TempDir())
	f, err := os.Open(archive)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var raw bytes.Buffer
	r, _, err := decompress(bufio.NewReader(f))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := raw.ReadFrom(r); err != nil {
		b.Fatal(err)
	}
	return raw.Bytes()
}

func benchLoad(b *testing.B, data []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var entries float64
	for b.Loop() {
		t := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
		rep, err := LoadArchiveFrom(t, "bench", bytes.NewReader(data), ArchiveOptions{})
		if err != nil {
			b.Fatal(err)
		}
		entries += float64(rep.Dirs + rep.Attrs + rep.Symlinks)
	}
	b.ReportMetric(entries/float64(b.N), "entries")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/entries, "ns/entry")
}
