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
// TestLoadArchiveRoundTrip448 in hwloc-gather-topology's layout (31,734
// entries), source=synth10k a 140-CPU one (10,156 entries: the issue's
// goal is under 100 ms a load, bzip2 included). It reports the time per
// load and per entry served.
func BenchmarkLoadArchive(b *testing.B) {
	sources := map[string][]byte{"synth448": synthTar(b, synth448), "synth10k": synthTar(b, synth10k)}
	if _, err := exec.LookPath("hwloc-gather-topology"); err == nil {
		sources["gathered"] = gatheredTar(b)
	}
	for _, name := range []string{"gathered", "synth10k", "synth448"} {
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

// synth10k is a 140-CPU machine made as synth448 is: 10,157 nodes.
var synth10k = SynthConfig{CPUs: 140, Sockets: 2, ThreadsPerCore: 2, MemBlocks: 8, Netdevs: 1, Disks: 1}.WithDefaults()

// synthTar is the synthetic tree of cfg as an uncompressed archive in
// hwloc-gather-topology's layout.
func synthTar(b *testing.B, cfg SynthConfig) []byte {
	src := testtree.New(b, "rwsem")
	if err := BuildSynthetic(src, cfg); err != nil {
		b.Fatal(err)
	}
	src.Freeze(true)
	return treeToTar(b, src, "mach/sys/")
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
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/load")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/entries, "ns/entry")
}
