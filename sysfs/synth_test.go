package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// newSynthTree builds a synthetic tree under lock for c (defaults filled).
func newSynthTree(t *testing.T, lock string, c SynthConfig) (*kernfsim.Tree, *kernfsim.Walker) {
	t.Helper()
	tr, err := NewSynthetic(locking.MustNew(lock), c.WithDefaults())
	require.NoError(t, err)
	if g := tr.Strategy().Grace(); g != nil {
		t.Cleanup(g.Barrier)
	}
	return tr, kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
}

// synthRead returns the contents of the attribute at path, failing the test on
// error.
func synthRead(t *testing.T, w *kernfsim.Walker, path string) string {
	t.Helper()
	buf := make([]byte, kernfsim.PageSize)
	n, err := w.ReadFile(kernfsim.RootCred, path, buf)
	require.NoError(t, err, "read %s", path)
	return string(buf[:n])
}

// synthWalk calls fn for every node below dir in depth-first name order.
func synthWalk(t *testing.T, tr *kernfsim.Tree, dir *kernfsim.Node, path string, fn func(path string, n *kernfsim.Node)) {
	t.Helper()
	var names []string
	tr.Readdir(dir, 0, func(d kernfsim.Dirent) bool { names = append(names, d.Name); return true })
	slices.Sort(names)
	for _, name := range names {
		n, err := tr.Lookup(dir, name)
		require.NoError(t, err)
		p := strings.TrimPrefix(path+"/"+name, "/")
		fn(p, n)
		if n.Kind() == kernfsim.KindDir {
			synthWalk(t, tr, n, p, fn)
		}
	}
}

// parseCPUList parses a kernel CPU list ("0-3,8") into a sorted slice.
func parseCPUList(t *testing.T, s string) []int {
	t.Helper()
	var cpus []int
	for r := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), ",") {
		if r == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			t.Fatalf("bad list %q", s)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// parseCPUMask parses a kernel hex mask ("00000001,00000003") into a sorted
// slice of bit numbers.
func parseCPUMask(t *testing.T, s string) []int {
	t.Helper()
	chunks := strings.Split(strings.TrimSuffix(s, "\n"), ",")
	var cpus []int
	for i := len(chunks) - 1; i >= 0; i-- {
		v, err := strconv.ParseUint(chunks[i], 16, 32)
		require.NoError(t, err, "bad mask %q", s)
		for bit := range 32 {
			if v&(1<<bit) != 0 {
				cpus = append(cpus, (len(chunks)-1-i)*32+bit)
			}
		}
	}
	return cpus
}

func TestBitmapPrinters(t *testing.T) {
	span := func(lo, hi int) []int {
		var v []int
		for i := lo; i <= hi; i++ {
			v = append(v, i)
		}
		return v
	}
	tests := []struct {
		n          int
		bits       []int
		mask, list string
	}{
		{1, []int{0}, "1", "0"},
		{2, []int{0, 1}, "3", "0-1"}, // this machine's cpu0/topology/package_cpus{,_list}
		{3, []int{0, 2}, "5", "0,2"},
		{4, nil, "0", ""},
		{8, span(0, 7), "ff", "0-7"},
		{16, append(span(0, 3), span(8, 11)...), "0f0f", "0-3,8-11"},
		{36, []int{35}, "8,00000000", "35"},
		{40, span(0, 7), "00,000000ff", "0-7"},
		{64, span(0, 7), "00000000,000000ff", "0-7"},
		{64, []int{0, 32}, "00000001,00000001", "0,32"},
		{64, append(span(0, 15), span(32, 47)...), "0000ffff,0000ffff", "0-15,32-47"},
		{128, append(span(0, 31), span(64, 95)...), "00000000,ffffffff,00000000,ffffffff", "0-31,64-95"},
		{448, span(0, 447), strings.Repeat("ffffffff,", 13) + "ffffffff", "0-447"},
	}
	for _, tt := range tests {
		b := newBitmap(tt.n)
		for _, i := range tt.bits {
			b.add(i)
		}
		if got := b.mask(); got != tt.mask {
			t.Errorf("n=%d %v: mask got %q, want %q", tt.n, tt.bits, got, tt.mask)
		}
		if got := b.list(); got != tt.list {
			t.Errorf("n=%d %v: list got %q, want %q", tt.n, tt.bits, got, tt.list)
		}
	}
}

func TestRelTarget(t *testing.T) {
	tests := []struct{ dir, target, want string }{
		{"class/net", "devices/virtual/net/lo", "../../devices/virtual/net/lo"},
		{"block", "devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1", "../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1"},
		{"devices/system/cpu/cpu0", "devices/system/node/node0", "../../node/node0"},
		{"devices/system/cpu/cpu0", "bus/cpu", "../../../../bus/cpu"},
		{"bus/pci/drivers/nvme", "devices/pci0000:00/0000:00:04.0", "../../../../devices/pci0000:00/0000:00:04.0"},
		{"devices/pci0000:00/0000:00:03.0/net/eth0", "devices/pci0000:00/0000:00:03.0", "../../../0000:00:03.0"},
		{"devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1", "devices/pci0000:00/0000:00:04.0/nvme/nvme0", "../../nvme0"},
		{"", "bus/cpu", "bus/cpu"},
		{"a", "a/b", "b"},
		{"a/b", "a/b/c/d", "c/d"},
		{"a/bc", "a/b/x", "../b/x"},
	}
	for _, tt := range tests {
		if got := relTarget(tt.dir, tt.target); got != tt.want {
			t.Errorf("relTarget(%q, %q) got %q, want %q", tt.dir, tt.target, got, tt.want)
		}
	}
}

var topologyConfigs = []SynthConfig{
	{CPUs: 8, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 5, Netdevs: 1, Disks: 1},
	{CPUs: 64, Sockets: 2, ThreadsPerCore: 2, MemBlocks: 40},
	{CPUs: 448, Sockets: 4, ThreadsPerCore: 4, MemBlocks: 64, Netdevs: 2, Disks: 1},
	{CPUs: 64, Sockets: 2, ThreadsPerCore: 2, NUMANodes: 4, MemBlocks: 3},  // sub-NUMA clusters; a node without memory
	{CPUs: 16, Sockets: 4, ThreadsPerCore: 1, NUMANodes: 2, MemBlocks: 64}, // two sockets per node
}

func synthConfigName(c SynthConfig) string {
	c = c.WithDefaults()
	return fmt.Sprintf("cpus=%d/sockets=%d/threads=%d/nodes=%d", c.CPUs, c.Sockets, c.ThreadsPerCore, c.NUMANodes)
}

func TestSynthTopology(t *testing.T) {
	for _, c := range topologyConfigs {
		t.Run(synthConfigName(c), func(t *testing.T) {
			c = c.WithDefaults()
			_, w := newSynthTree(t, "rwsem", c)
			all := fmt.Sprintf("0-%d\n", c.CPUs-1)
			for _, f := range []string{"online", "possible", "present"} {
				if got := synthRead(t, w, "devices/system/cpu/"+f); got != all {
					t.Errorf("cpu/%s got %q, want %q", f, got, all)
				}
			}
			for cpu := range c.CPUs {
				checkSynthCPU(t, w, c, cpu)
			}
			checkSynthNodes(t, w, c)
		})
	}
}

// synthCPUSets reads cpu's mask and list attributes named base and base_list
// in dir, checks they agree, and returns the list.
func synthCPUSets(t *testing.T, w *kernfsim.Walker, dir, maskName, listName string) []int {
	t.Helper()
	list := parseCPUList(t, synthRead(t, w, dir+"/"+listName))
	if mask := parseCPUMask(t, synthRead(t, w, dir+"/"+maskName)); !slices.Equal(mask, list) {
		t.Errorf("%s/%s = %v, but %s = %v", dir, maskName, mask, listName, list)
	}
	return list
}

func checkSynthCPU(t *testing.T, w *kernfsim.Walker, c SynthConfig, cpu int) {
	t.Helper()
	topo := fmt.Sprintf("devices/system/cpu/cpu%d/topology", cpu)
	threads := synthCPUSets(t, w, topo, "thread_siblings", "thread_siblings_list")
	if len(threads) != c.ThreadsPerCore || !slices.Contains(threads, cpu) {
		t.Errorf("cpu%d: thread siblings %v: want %d including itself", cpu, threads, c.ThreadsPerCore)
	}
	pkg := synthCPUSets(t, w, topo, "package_cpus", "package_cpus_list")
	if len(pkg) != c.CPUs/c.Sockets || !slices.Contains(pkg, cpu) {
		t.Errorf("cpu%d: package cpus %v: want %d including itself", cpu, pkg, c.CPUs/c.Sockets)
	}
	for _, same := range [][3]string{
		{"core_cpus", "core_cpus_list", "thread"}, {"cluster_cpus", "cluster_cpus_list", "thread"},
		{"core_siblings", "core_siblings_list", "package"}, {"die_cpus", "die_cpus_list", "package"},
	} {
		want := map[string][]int{"thread": threads, "package": pkg}[same[2]]
		if got := synthCPUSets(t, w, topo, same[0], same[1]); !slices.Equal(got, want) {
			t.Errorf("cpu%d: %s got %v, want %v", cpu, same[1], got, want)
		}
	}
	id := func(cpu int, f string) string {
		return synthRead(t, w, fmt.Sprintf("devices/system/cpu/cpu%d/topology/%s", cpu, f))
	}
	for _, s := range threads {
		if id(s, "core_id") != id(cpu, "core_id") || id(s, "physical_package_id") != id(cpu, "physical_package_id") {
			t.Errorf("cpu%d and its sibling cpu%d differ in core_id or physical_package_id", cpu, s)
		}
	}
	for k, want := range [][]int{threads, threads, threads, pkg} {
		dir := fmt.Sprintf("devices/system/cpu/cpu%d/cache/index%d", cpu, k)
		if got := synthCPUSets(t, w, dir, "shared_cpu_map", "shared_cpu_list"); !slices.Equal(got, want) {
			t.Errorf("cpu%d: cache index%d shared %v, want %v", cpu, k, got, want)
		}
	}
}

// checkSynthNodes checks that the NUMA nodes partition the CPUs and memory
// blocks, and that each CPU links to its node.
func checkSynthNodes(t *testing.T, w *kernfsim.Walker, c SynthConfig) {
	t.Helper()
	seen, blocks := make([]int, c.CPUs), 0
	for n := range c.NUMANodes {
		dir := fmt.Sprintf("devices/system/node/node%d", n)
		for _, cpu := range synthCPUSets(t, w, dir, "cpumap", "cpulist") {
			seen[cpu]++
			if _, err := w.Resolve(kernfsim.RootCred, fmt.Sprintf("devices/system/cpu/cpu%d/node%d/cpulist", cpu, n)); err != nil {
				t.Errorf("cpu%d in %s: %v", cpu, dir, err)
			}
		}
		node, err := w.Resolve(kernfsim.RootCred, dir)
		require.NoError(t, err)
		w.Tree().Readdir(node, 0, func(d kernfsim.Dirent) bool {
			if strings.HasPrefix(d.Name, "memory") && d.Kind == kernfsim.KindSymlink {
				blocks++
				if got := synthRead(t, w, dir+"/"+d.Name+"/"+fmt.Sprintf("node%d/cpulist", n)); got == "" {
					t.Errorf("%s/%s does not link back", dir, d.Name)
				}
			}
			return true
		})
	}
	for cpu, k := range seen {
		if k != 1 {
			t.Errorf("cpu%d is in %d node cpulists, want 1", cpu, k)
		}
	}
	if blocks != c.MemBlocks {
		t.Errorf("nodes link %d memory blocks, want %d", blocks, c.MemBlocks)
	}
}

func TestSynthMemoryBlocks(t *testing.T) {
	c := SynthConfig{CPUs: 4, Sockets: 1, MemBlocks: 100, MemBlockSize: 1 << 30}
	tr, w := newSynthTree(t, "rcu", c)
	memory, err := w.Resolve(kernfsim.RootCred, "devices/system/memory")
	require.NoError(t, err)
	blocks := 0
	tr.Readdir(memory, 0, func(d kernfsim.Dirent) bool {
		if strings.HasPrefix(d.Name, "memory") {
			blocks++
		}
		return true
	})
	if blocks != 100 {
		t.Errorf("memory/ has %d blocks, want 100", blocks)
	}
	for path, want := range map[string]string{
		"devices/system/memory/block_size_bytes":    "40000000\n",
		"devices/system/memory/memory0/valid_zones": "none\n",
		"devices/system/memory/memory2/valid_zones": "DMA32\n",
		"devices/system/memory/memory4/valid_zones": "Normal\n",
		"devices/system/memory/memory42/phys_index": "0000002a\n",
		"devices/system/memory/memory99/state":      "online\n",
		"bus/memory/devices/memory7/node0/cpulist":  "0-3\n",
		"devices/system/node/node0/memory99/online": "1\n",
		"devices/system/node/node0/meminfo": "Node 0 MemTotal:       104857600 kB\n" +
			"Node 0 MemFree:        101580800 kB\nNode 0 MemUsed:         3276800 kB\n",
	} {
		if got := synthRead(t, w, path); got != want {
			t.Errorf("%s got %q, want %q", path, got, want)
		}
	}
}

func TestSynthLinksResolve(t *testing.T) {
	c := SynthConfig{CPUs: 8, Sockets: 2, MemBlocks: 8, Netdevs: 3, Disks: 2}
	tr, w := newSynthTree(t, "mutex", c)
	for _, dir := range []string{"class/net", "class/block", "class/nvme", "block", "bus/pci/devices", "dev/block"} {
		d, err := w.Resolve(kernfsim.RootCred, dir)
		require.NoError(t, err)
		n := 0
		tr.Readdir(d, 0, func(e kernfsim.Dirent) bool {
			n++
			st, err := w.Stat(kernfsim.RootCred, dir+"/"+e.Name)
			if err != nil || st.Kind != kernfsim.KindDir {
				t.Errorf("%s/%s resolves to %v, %v; want a directory", dir, e.Name, st.Kind, err)
			}
			return true
		})
		if n == 0 {
			t.Errorf("%s is empty", dir)
		}
	}
	if got := synthRead(t, w, "class/net/eth2/ifindex"); got != "4\n" {
		t.Errorf("eth2 ifindex got %q, want %q", got, "4\n")
	}
	synthWalk(t, tr, tr.Root(), "", func(path string, n *kernfsim.Node) {
		if n.Kind() == kernfsim.KindSymlink {
			if _, err := w.Resolve(kernfsim.RootCred, path); err != nil {
				t.Errorf("symlink %s -> %s: %v", path, n.Target(), err)
			}
		}
	})
}

// TestSynthReadable reads every attribute with a read bit, as root, under
// every strategy: each shows something ending in "\n", as sysfs does.
func TestSynthReadable(t *testing.T) {
	c := SynthConfig{CPUs: 8, MemBlocks: 16}
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr, w := newSynthTree(t, lock, c)
		attrs := 0
		synthWalk(t, tr, tr.Root(), "", func(path string, n *kernfsim.Node) {
			st := tr.Getattr(n)
			if st.Uid != 0 || st.Gid != 0 {
				t.Errorf("%s: uid/gid %d/%d, want 0/0", path, st.Uid, st.Gid)
			}
			if want := map[kernfsim.Kind]fs.FileMode{kernfsim.KindDir: 0o755, kernfsim.KindSymlink: 0o777}[n.Kind()]; want != 0 && st.Mode != want {
				t.Errorf("%s: mode %o, want %o", path, st.Mode, want)
			}
			if n.Kind() != kernfsim.KindAttr || st.Mode&0o444 == 0 {
				return
			}
			attrs++
			if got := synthRead(t, w, path); got == "" || !strings.HasSuffix(got, "\n") {
				t.Errorf("%s shows %q: want a value ending in a newline", path, got)
			}
		})
		if attrs < 800 {
			t.Errorf("read %d attributes, want more than 800", attrs)
		}
	})
}

func TestSynthWritable(t *testing.T) {
	tr, w := newSynthTree(t, "none", SynthConfig{CPUs: 8, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 4})
	steps := []struct {
		path, data string
		err        error
		check      string // path whose value must then be want
		want       string
	}{
		{"devices/system/cpu/cpu1/online", "0\n", nil, "devices/system/cpu/online", "0,2-7\n"},
		{"devices/system/cpu/cpu3/online", "off", nil, "devices/system/cpu/offline", "1,3\n"},
		{"devices/system/cpu/cpu1/online", "maybe", syscall.EINVAL, "devices/system/cpu/cpu1/online", "0\n"},
		{"devices/system/memory/memory2/state", "offline\n", nil, "devices/system/memory/memory2/online", "0\n"},
		{"devices/system/memory/memory2/online", "1", nil, "devices/system/memory/memory2/state", "online\n"},
		{"devices/system/memory/memory2/state", "gone", syscall.EINVAL, "devices/system/memory/memory2/state", "online\n"},
		{"block/nvme0n1/queue/scheduler", "kyber\n", nil, "block/nvme0n1/queue/scheduler", "none mq-deadline [kyber] bfq\n"},
		{"block/nvme0n1/queue/scheduler", "cfq", syscall.EINVAL, "block/nvme0n1/queue/scheduler", "none mq-deadline [kyber] bfq\n"},
		{"class/net/eth0/mtu", "9000\n", nil, "class/net/eth0/mtu", "9000\n"},
	}
	for _, s := range steps {
		if err := rootWrite(w, s.path, s.data); !errors.Is(err, s.err) && !(s.err == nil && err == nil) {
			t.Errorf("write %q to %s: got %v, want %v", s.data, s.path, err, s.err)
		}
		if got := synthRead(t, w, s.check); got != s.want {
			t.Errorf("after writing %q to %s: %s got %q, want %q", s.data, s.path, s.check, got, s.want)
		}
	}
	if _, err := w.Open(kernfsim.RootCred, "devices/system/cpu/cpu0/online", os.O_WRONLY); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cpu0/online: got %v, want it absent as on x86", err)
	}
	if _, err := tr.Mkdir(tr.Root(), "extra", 0o755); !errors.Is(err, locking.ErrReadOnly) {
		t.Errorf("Mkdir on a sealed none tree: got %v, want %v", err, locking.ErrReadOnly)
	}
}

func TestSynthUeventSeqnum(t *testing.T) {
	tr, w := newSynthTree(t, "rwsem", SynthConfig{CPUs: 2, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 1})
	before, _ := strconv.Atoi(strings.TrimSpace(synthRead(t, w, "kernel/uevent_seqnum")))
	d, err := tr.Mkdir(tr.Root(), "extra", 0o755)
	require.NoError(t, err)
	testkit.Must(tr.AddAttr(d, "attr", 0o444, kernfsim.Static("x\n")))(t)
	after, _ := strconv.Atoi(strings.TrimSpace(synthRead(t, w, "kernel/uevent_seqnum")))
	if before < 100 || after != before+1 {
		t.Errorf("uevent_seqnum %d then %d: want about one per directory built, then +1 for one Mkdir", before, after)
	}
}

func TestSynthValidate(t *testing.T) {
	base := SynthConfig{}.WithDefaults()
	with := func(f func(*SynthConfig)) SynthConfig { c := base; f(&c); return c }
	tests := []struct {
		c     SynthConfig
		field string
		valid string
	}{
		{SynthConfig{}, "CPUs", "1..8192"},
		{with(func(c *SynthConfig) { c.CPUs = 10000 }), "CPUs", "1..8192"},
		{with(func(c *SynthConfig) { c.CPUs = 66 }), "CPUs", "multiple of Sockets x ThreadsPerCore = 4"},
		{with(func(c *SynthConfig) { c.Sockets = 65 }), "Sockets", "1..64"},
		{with(func(c *SynthConfig) { c.ThreadsPerCore = 9 }), "ThreadsPerCore", "1..8"},
		{with(func(c *SynthConfig) { c.NUMANodes = 3 }), "NUMANodes", "divide Sockets (2)"},
		{with(func(c *SynthConfig) { c.NUMANodes = 12 }), "NUMANodes", "16 cores per socket"},
		{with(func(c *SynthConfig) { c.NUMANodes = 2000 }), "NUMANodes", "1..1024"},
		{with(func(c *SynthConfig) { c.MemBlocks = -1 }), "MemBlocks", "0..1048576"},
		{with(func(c *SynthConfig) { c.MemBlocks = 1e9 }), "MemBlocks", "0..1048576"},
		{with(func(c *SynthConfig) { c.MemBlockSize = 100 << 20 }), "MemBlockSize", "power of two"},
		{with(func(c *SynthConfig) { c.Netdevs = 5000 }), "Netdevs", "0..1024"},
		{with(func(c *SynthConfig) { c.Disks = -2 }), "Disks", "0..1024"},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field || !strings.Contains(err.Error(), tt.valid) {
			t.Errorf("%+v: got %v, want a ConfigError on %s saying %q", tt.c, err, tt.field, tt.valid)
		}
	}
	for _, c := range append(topologyConfigs, base, with(func(c *SynthConfig) { c.MemBlocks, c.Netdevs, c.Disks = 0, 0, 0 })) {
		if err := c.WithDefaults().Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	want := SynthConfig{CPUs: 64, Sockets: 2, ThreadsPerCore: 2, NUMANodes: 2, MemBlocks: 2048, MemBlockSize: 128 << 20, Netdevs: 4, Disks: 4}
	if base != want {
		t.Errorf("WithDefaults got %+v, want %+v", base, want)
	}
}

func TestBuildSyntheticNeedsEmptyTree(t *testing.T) {
	tr := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
	testkit.Must(tr.Mkdir(tr.Root(), "x", 0o755))(t)
	if err := BuildSynthetic(tr, SynthConfig{}.WithDefaults()); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("got %v, want an error saying the tree must be empty", err)
	}
}

func TestMemoryProbeHotAdds(t *testing.T) {
	c := SynthConfig{CPUs: 2, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 4}.WithDefaults()
	tr := testtree.New(t, "rwsem")
	require.NoError(t, BuildSynthetic(tr, c))
	w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
	probe := "devices/system/memory/probe"
	require.NoError(t, writeFile(w, probe, []byte(fmt.Sprintf("0x%x\n", 10*c.MemBlockSize))))
	buf := make([]byte, 32)
	k := testkit.Must(w.ReadFile(kernfsim.RootCred, "devices/system/memory/memory10/state", buf))(t)
	if got := string(buf[:k]); got != "offline\n" {
		t.Fatalf("a probed block's state: got %q, want offline", got)
	}
	for _, bad := range []string{"0x1", "zz", "", fmt.Sprintf("%x", 10*c.MemBlockSize)} {
		if err := writeFile(w, probe, []byte(bad)); err == nil {
			t.Errorf("probe %q: accepted, want EINVAL or EEXIST", bad)
		}
	}
}
