package sysfs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// cpuinfoBlocks splits a /proc/cpuinfo into one key->value map per
// processor.
func cpuinfoBlocks(t *testing.T, s string) []map[string]string {
	t.Helper()
	var blocks []map[string]string
	for block := range strings.SplitSeq(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		m := map[string]string{}
		for line := range strings.SplitSeq(block, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("line %q has no colon", line)
			}
			m[strings.TrimRight(k, "\t")] = strings.TrimSpace(v)
		}
		blocks = append(blocks, m)
	}
	return blocks
}

func synthCPUInfo(t *testing.T, tr *kernfsim.Tree) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, WriteCPUInfo(&b, tr, SynthCPUModel))
	return b.String()
}

// TestCPUInfoTopology checks the per-processor fields of a 2-socket,
// 2-cores-per-socket, 2-threads-per-core machine: Linux numbers the first
// thread of every core first, so cpu4 is cpu0's sibling.
func TestCPUInfoTopology(t *testing.T) {
	tr, _ := newSynthTree(t, "rwsem", SynthConfig{CPUs: 8, Sockets: 2, ThreadsPerCore: 2, MemBlocks: 4})
	blocks := cpuinfoBlocks(t, synthCPUInfo(t, tr))
	if len(blocks) != 8 {
		t.Fatalf("got %d processors, want 8", len(blocks))
	}
	// physical id, core id, apicid (package<<2 | core<<1 | thread)
	want := [][3]string{
		{"0", "0", "0"}, {"0", "1", "2"}, {"1", "0", "4"}, {"1", "1", "6"},
		{"0", "0", "1"}, {"0", "1", "3"}, {"1", "0", "5"}, {"1", "1", "7"},
	}
	for i, b := range blocks {
		got := [3]string{b["physical id"], b["core id"], b["apicid"]}
		if got != want[i] || b["processor"] != itoa(i) || b["initial apicid"] != b["apicid"] {
			t.Errorf("processor %s: got physical id, core id, apicid %v (initial %s), want %v", b["processor"], got, b["initial apicid"], want[i])
		}
		if b["siblings"] != "4" || b["cpu cores"] != "2" || b["cache size"] != "3072 KB" {
			t.Errorf("processor %d: got siblings %s, cpu cores %s, cache size %q; want 4, 2, 3072 KB (the L3)",
				i, b["siblings"], b["cpu cores"], b["cache size"])
		}
		if b["vendor_id"] != "GenuineIntel" || b["model"] != "106" {
			t.Errorf("processor %d: got vendor %q model %q", i, b["vendor_id"], b["model"])
		}
	}
}

// TestCPUInfoOffline checks that an offline CPU leaves /proc/cpuinfo and
// its package's siblings, as on Linux.
func TestCPUInfoOffline(t *testing.T) {
	tr, w := newSynthTree(t, "rcu", SynthConfig{CPUs: 8, Sockets: 2, ThreadsPerCore: 2, MemBlocks: 4})
	require.NoError(t, rootWrite(w, "devices/system/cpu/cpu6/online", "0"))
	blocks := cpuinfoBlocks(t, synthCPUInfo(t, tr))
	var procs []string
	for _, b := range blocks {
		procs = append(procs, b["processor"])
		if want := map[string]string{"0": "4", "1": "3"}[b["physical id"]]; b["siblings"] != want {
			t.Errorf("processor %s: got siblings %s, want %s", b["processor"], b["siblings"], want)
		}
	}
	if want := []string{"0", "1", "2", "3", "4", "5", "7"}; !slices.Equal(procs, want) {
		t.Errorf("got processors %v, want %v", procs, want)
	}
}

// TestCPUInfoFormat checks the kernel's layout: tabs to column 16, and
// "power management:" with nothing after the colon.
func TestCPUInfoFormat(t *testing.T) {
	tr, _ := newSynthTree(t, "mutex", SynthConfig{CPUs: 2, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 1})
	s := synthCPUInfo(t, tr)
	for _, want := range []string{
		"processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\n",
		"\ncore id\t\t: 1\n", "\ncache_alignment\t: 64\n", "\npower management:\n\nprocessor\t: 1\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("cpuinfo lacks %q:\n%s", want, s)
		}
	}
	if !strings.HasSuffix(s, "power management:\n\n") {
		t.Errorf("cpuinfo does not end with a blank line after the last processor")
	}
}

// hostCPUInfo is the first processor of an AMD guest's /proc/cpuinfo.
const hostCPUInfo = `processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model		: 1
model name	: AMD EPYC
stepping	: 1
cache size	: 512 KB
physical id	: 0
siblings	: 2
core id		: 0
cpu cores	: 2
apicid		: 0
flags		: fpu vme de pse
bugs		: sysret_ss_attrs
power management:

processor	: 1
vendor_id	: AuthenticAMD
`

// TestParseCPUModel checks that a host's identity is kept line for line,
// its cache size included, and its topology left to the tree.
func TestParseCPUModel(t *testing.T) {
	m, err := ParseCPUModel(strings.NewReader(hostCPUInfo))
	require.NoError(t, err)
	want := CPUModel{
		{"processor", ""}, {"vendor_id", "AuthenticAMD"}, {"cpu family", "25"}, {"model", "1"},
		{"model name", "AMD EPYC"}, {"stepping", "1"}, {"cache size", "512 KB"}, {"physical id", ""},
		{"siblings", ""}, {"core id", ""}, {"cpu cores", ""}, {"apicid", ""},
		{"flags", "fpu vme de pse"}, {"bugs", "sysret_ss_attrs"}, {"power management", ""},
	}
	if !slices.Equal(m, want) {
		t.Errorf("got %q, want %q", m, want)
	}
	tr, _ := newSynthTree(t, "rwsem", SynthConfig{CPUs: 4, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 1})
	var b strings.Builder
	require.NoError(t, WriteCPUInfo(&b, tr, m))
	blocks := cpuinfoBlocks(t, b.String())
	if len(blocks) != 4 || blocks[3]["cache size"] != "512 KB" || blocks[3]["core id"] != "3" || blocks[3]["cpu cores"] != "4" {
		t.Errorf("got %v for the last processor of 4", blocks[len(blocks)-1])
	}
	if _, err := ParseCPUModel(strings.NewReader("no cpuinfo here\n")); err == nil {
		t.Error("parsing a file with no processor: got no error")
	}
}

// TestCPUInfoRoundTrip checks that WriteCPUInfo's output parses back to
// its model, the derived cache size aside.
func TestCPUInfoRoundTrip(t *testing.T) {
	tr, _ := newSynthTree(t, "rwsem", SynthConfig{CPUs: 4, Sockets: 1, ThreadsPerCore: 2, MemBlocks: 1})
	m, err := ParseCPUModel(strings.NewReader(synthCPUInfo(t, tr)))
	require.NoError(t, err)
	want := slices.Clone(SynthCPUModel)
	want[slices.IndexFunc(want, func(f CPUInfoField) bool { return f.Key == "cache size" })].Value = "3072 KB"
	if !slices.Equal(m, want) {
		t.Errorf("got %q, want %q", m, want)
	}
}

func TestCPUInfoNoCPUs(t *testing.T) {
	var b strings.Builder
	if err := WriteCPUInfo(&b, testtree.New(t, "rwsem"), SynthCPUModel); err == nil {
		t.Error("a tree without devices/system/cpu: got no error")
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"", nil, true},
		{"0", []int{0}, true},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, true},
		{"3-1", nil, false},
		{"a", nil, false},
		{"0,", nil, false},
	} {
		got, err := ParseCPUList(tc.in)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("ParseCPUList(%q): got %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func ExampleWriteCPUInfo() {
	c := SynthConfig{CPUs: 4, Sockets: 2, ThreadsPerCore: 1, MemBlocks: 1}.WithDefaults()
	t, err := NewSynthetic(locking.MustNew("rcu"), c)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	if err := WriteCPUInfo(&b, t, SynthCPUModel); err != nil {
		panic(err)
	}
	for line := range strings.SplitSeq(b.String(), "\n") {
		if k, _, _ := strings.Cut(line, "\t"); k == "processor" || k == "physical id" || k == "core id" {
			fmt.Println(strings.ReplaceAll(line, "\t", ""))
		}
	}
	// Output:
	// processor: 0
	// physical id: 0
	// core id: 0
	// processor: 1
	// physical id: 0
	// core id: 1
	// processor: 2
	// physical id: 1
	// core id: 0
	// processor: 3
	// physical id: 1
	// core id: 1
}
