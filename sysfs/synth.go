package sysfs

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// SynthConfig sizes a synthetic sysfs. Start from WithDefaults and
// override: BuildSynthetic takes the config as given, so a zero MemBlocks,
// Netdevs or Disks then means none.
type SynthConfig struct {
	CPUs           int    // logical CPUs; default 64
	Sockets        int    // default 2
	ThreadsPerCore int    // SMT threads per core; default 2
	NUMANodes      int    // default = Sockets; a multiple of Sockets models sub-NUMA clustering
	MemBlocks      int    // memory blocks; default 2048 (256 GiB of 128 MiB blocks)
	MemBlockSize   uint64 // bytes per memory block, a power of two; default 128 MiB
	Netdevs        int    // ethernet devices eth0.. on PCI, besides lo; default 4
	Disks          int    // NVMe disks nvme0n1, nvme1n1, ... on PCI; default 4
}

// Limits on a SynthConfig, so that nobody builds 10^9 nodes by mistake.
// The largest config allowed is about 12 million nodes (some 2 GiB of heap).
const (
	MaxSynthCPUs      = 8192    // x86_64's largest NR_CPUS; kernel_max is MaxSynthCPUs-1
	MaxSynthThreads   = 8       // ThreadsPerCore
	MaxSynthNUMANodes = 1024    // MAX_NUMNODES with NODES_SHIFT=10
	MaxSynthMemBlocks = 1 << 20 // 128 TiB of 128 MiB blocks, about 11.5 million nodes
	MaxSynthDevices   = 1024    // each of Netdevs and Disks
	MinSynthBlockSize = 16 << 20
	MaxSynthBlockSize = 16 << 30
)

// WithDefaults returns c with every zero field set to its default.
func (c SynthConfig) WithDefaults() SynthConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.CPUs, 64)
	def(&c.Sockets, 2)
	def(&c.ThreadsPerCore, 2)
	def(&c.NUMANodes, c.Sockets)
	def(&c.MemBlocks, 2048)
	def(&c.Netdevs, 4)
	def(&c.Disks, 4)
	if c.MemBlockSize == 0 {
		c.MemBlockSize = 128 << 20
	}
	return c
}

// ConfigError is an invalid SynthConfig field.
type ConfigError struct {
	Field string // the SynthConfig field, e.g. "CPUs"
	Value any    // its value
	Valid string // what it must be
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("synthetic sysfs: %s = %v: %s", e.Field, e.Value, e.Valid)
}

// Validate reports the first invalid field as a *ConfigError naming the
// field and its valid range.
func (c SynthConfig) Validate() error {
	for _, chk := range c.checks() {
		if !chk.ok() {
			return &ConfigError{Field: chk.field, Value: chk.value, Valid: chk.valid}
		}
	}
	return nil
}

type configCheck struct {
	field string
	value any
	ok    func() bool
	valid string
}

// checks lists the rules in order: ranges first, so the divisibility
// rules after them never divide by zero.
func (c SynthConfig) checks() []configCheck {
	in := func(v, lo, hi int) func() bool { return func() bool { return v >= lo && v <= hi } }
	rng := func(lo, hi int) string { return fmt.Sprintf("must be %d..%d", lo, hi) }
	cores := func() int { return c.CPUs / max(c.Sockets*c.ThreadsPerCore, 1) }
	return []configCheck{
		{"CPUs", c.CPUs, in(c.CPUs, 1, MaxSynthCPUs), rng(1, MaxSynthCPUs)},
		{"Sockets", c.Sockets, in(c.Sockets, 1, c.CPUs), rng(1, c.CPUs) + " (at most CPUs)"},
		{"ThreadsPerCore", c.ThreadsPerCore, in(c.ThreadsPerCore, 1, MaxSynthThreads), rng(1, MaxSynthThreads)},
		{"CPUs", c.CPUs, func() bool { return c.CPUs%(c.Sockets*c.ThreadsPerCore) == 0 },
			fmt.Sprintf("must be a multiple of Sockets x ThreadsPerCore = %d", c.Sockets*c.ThreadsPerCore)},
		{"NUMANodes", c.NUMANodes, in(c.NUMANodes, 1, MaxSynthNUMANodes), rng(1, MaxSynthNUMANodes)},
		{"NUMANodes", c.NUMANodes, func() bool {
			k := c.NUMANodes / c.Sockets
			return c.Sockets%c.NUMANodes == 0 || c.NUMANodes%c.Sockets == 0 && cores()%k == 0
		}, fmt.Sprintf("must divide Sockets (%d), or be a multiple of it whose share per socket divides the %d cores per socket",
			c.Sockets, cores())},
		{"MemBlocks", c.MemBlocks, in(c.MemBlocks, 0, MaxSynthMemBlocks), rng(0, MaxSynthMemBlocks)},
		{"MemBlockSize", c.MemBlockSize, func() bool {
			s := c.MemBlockSize
			return s >= MinSynthBlockSize && s <= MaxSynthBlockSize && s&(s-1) == 0
		}, fmt.Sprintf("must be a power of two from %d (16 MiB) to %d (16 GiB)", MinSynthBlockSize, uint64(MaxSynthBlockSize))},
		{"Netdevs", c.Netdevs, in(c.Netdevs, 0, MaxSynthDevices), rng(0, MaxSynthDevices)},
		{"Disks", c.Disks, in(c.Disks, 0, MaxSynthDevices), rng(0, MaxSynthDevices)},
	}
}

// NewSynthetic returns a new tree under s populated by BuildSynthetic and
// sealed.
func NewSynthetic(s locking.Strategy, c SynthConfig) (*kernfsim.Tree, error) {
	t := kernfsim.New(s, kernfsim.Options{})
	if err := BuildSynthetic(t, c); err != nil {
		return nil, err
	}
	t.Seal()
	return t, nil
}

// BuildSynthetic populates the empty tree t with a sysfs for the machine c
// describes. It does not seal t, so callers can add more (the in-tree ABI)
// before sealing. On error t may be partly built. Values agree with each other the way a real
// kernel's do: CPU numbering, topology masks and lists, caches, NUMA nodes,
// memory blocks and the symlinks between them. kernel/uevent_seqnum counts
// the directories added and removed, so BuildSynthetic subscribes to t.
func BuildSynthetic(t *kernfsim.Tree, c SynthConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if n := t.Nodes(); n != 1 {
		return fmt.Errorf("synthetic sysfs: the tree must be empty, it has %d nodes", n)
	}
	s := newSynth(c)
	s.tree = t
	b := newBuilder(t)
	if err := s.root().addChildren(b, t.Root(), ""); err != nil {
		return err
	}
	s.seqnum.Store(uint64(b.dirs))
	t.Subscribe(s.countUevent)
	return nil
}

// The tree is written declaratively, as gVisor's sysfs is: nested dir
// literals of named entries, with each(n, fn) for n generated children,
// and one recursive builder. For example:
//
//	dir{
//		{"kernel_max", ro("8191")},
//		{"online", rw(cpuOnline{h, 1})},
//		{"node0", link("devices/system/node/node0")},
//		each(s.CPUs, s.cpu),
//	}

// spec is one node of a declarative topology: a dir, an attr, a link, or
// the generated children of an each.
type spec interface {
	add(b *builder, parent *kernfsim.Node, path, name string) error
}

// dir is a directory's children, in the order they are added.
type dir []ent

// ent is one named entry of a dir (unnamed for an each).
type ent struct {
	name string
	spec spec
}

// attr is an attribute file.
type attr struct {
	mode fs.FileMode
	src  kernfsim.Source
}

// link is a symlink to a path from the root; it is written relative to
// its directory, as sysfs does.
type link string

// gen generates n children; each returns it as an entry of a dir.
type gen struct {
	n  int
	at func(i int) (string, spec)
}

func each(n int, at func(i int) (string, spec)) ent { return ent{spec: &gen{n, at}} }

func ro(s string) attr                      { return attr{0o444, kernfsim.Static(s + "\n")} }
func roSrc(src kernfsim.Source) attr        { return attr{0o444, src} }
func rw(src kernfsim.Source) attr           { return attr{0o644, src} }
func rwVal(s string) attr                   { return attr{0o644, kernfsim.NewValue(s + "\n")} }
func wo() attr                              { return attr{0o200, writeOnly{}} }
func param(mode fs.FileMode, s string) attr { return attr{mode, kernfsim.NewValue(s + "\n")} }

// builder adds specs to a tree, sharing one *Attr per mode.
type builder struct {
	t     *kernfsim.Tree
	attrs map[fs.FileMode]*kernfsim.Attr
	dirs  int // directories added
}

func newBuilder(t *kernfsim.Tree) *builder {
	return &builder{t: t, attrs: make(map[fs.FileMode]*kernfsim.Attr)}
}

func (b *builder) add(parent *kernfsim.Node, name string, spec kernfsim.NodeSpec) (*kernfsim.Node, error) {
	return b.t.Add(parent, name, b.shared(spec))
}

// shared gives spec the one *Attr of its mode.
func (b *builder) shared(spec kernfsim.NodeSpec) kernfsim.NodeSpec {
	a := b.attrs[spec.Mode]
	if a == nil {
		now := b.t.Now()
		a = &kernfsim.Attr{Mode: spec.Mode, Mtime: now, Ctime: now}
		b.attrs[spec.Mode] = a
	}
	spec.Attr = a
	return spec
}

func (d dir) add(b *builder, parent *kernfsim.Node, path, name string) error {
	n, err := b.add(parent, name, kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755})
	if err != nil {
		return err
	}
	b.dirs++
	if path != "" {
		name = path + "/" + name
	}
	return d.addChildren(b, n, name)
}

func (d dir) addChildren(b *builder, n *kernfsim.Node, path string) error {
	for _, e := range d {
		if err := e.spec.add(b, n, path, e.name); err != nil {
			return err
		}
	}
	return nil
}

func (a attr) add(b *builder, parent *kernfsim.Node, _, name string) error {
	_, err := b.add(parent, name, kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: a.mode, Source: a.src})
	return err
}

func (l link) add(b *builder, parent *kernfsim.Node, path, name string) error {
	_, err := b.add(parent, name, kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Mode: 0o777, Target: relTarget(path, string(l))})
	return err
}

func (g *gen) add(b *builder, parent *kernfsim.Node, path, _ string) error {
	entries := make([]kernfsim.BatchEntry, g.n)
	specs := make([]spec, g.n)
	for i := range g.n {
		name, s := g.at(i)
		ns, ok := leafSpec(s, path)
		if !ok {
			return g.addOneByOne(b, parent, path)
		}
		entries[i], specs[i] = kernfsim.BatchEntry{Name: name, Spec: b.shared(ns)}, s
	}
	nodes, err := b.t.AddBatch(parent, entries)
	if err != nil {
		return err
	}
	for i, n := range nodes {
		if d, ok := specs[i].(dir); ok {
			b.dirs++
			if err := d.addChildren(b, n, joinSynthPath(path, entries[i].Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// leafSpec is the node a spec makes in its parent, its own children aside
// (false for a gen, which makes several).
func leafSpec(s spec, path string) (kernfsim.NodeSpec, bool) {
	switch s := s.(type) {
	case dir:
		return kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755}, true
	case attr:
		return kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: s.mode, Source: s.src}, true
	case link:
		return kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Mode: 0o777, Target: relTarget(path, string(s))}, true
	}
	return kernfsim.NodeSpec{}, false
}

func (g *gen) addOneByOne(b *builder, parent *kernfsim.Node, path string) error {
	for i := range g.n {
		name, s := g.at(i)
		if err := s.add(b, parent, path, name); err != nil {
			return err
		}
	}
	return nil
}

func joinSynthPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "/" + name
}

// relTarget is target (a path from the root) relative to the directory
// dir, as kernfs_get_target_path writes it: up from dir to the nearest
// ancestor of target's parent, then down.
func relTarget(dir, target string) string {
	tparent := target[:max(strings.LastIndexByte(target, '/'), 0)]
	ups := 0
	for dir != "" && !isAncestorOrSelf(dir, tparent) {
		dir = dir[:max(strings.LastIndexByte(dir, '/'), 0)]
		ups++
	}
	if dir != "" {
		target = target[len(dir)+1:]
	}
	var b strings.Builder
	b.Grow(3*ups + len(target))
	for range ups {
		b.WriteString("../")
	}
	b.WriteString(target)
	return b.String()
}

// isAncestorOrSelf reports whether path a is p or one of p's ancestors.
func isAncestorOrSelf(a, p string) bool {
	return strings.HasPrefix(p, a) && (len(p) == len(a) || p[len(a)] == '/')
}

// topology numbers CPUs as Linux does on x86: the first thread of every
// core, socket by socket, then the second thread of every core, and so on.
// So with 2 sockets of 16 cores, cpu0 and cpu32 are thread siblings.
type topology struct {
	SynthConfig
	cores int // cores per socket
}

func (t topology) allCores() int      { return t.Sockets * t.cores }
func (t topology) coreOf(cpu int) int { return cpu % t.allCores() } // global core index
func (t topology) socketOf(cpu int) int {
	return t.coreOf(cpu) / t.cores
}

// nodeOf is cpu's NUMA node: a socket's cores split evenly among its nodes,
// or whole sockets grouped into a node.
func (t topology) nodeOf(cpu int) int {
	g := t.coreOf(cpu)
	if t.NUMANodes >= t.Sockets {
		k := t.NUMANodes / t.Sockets
		return g / (t.cores / k)
	}
	return g / t.cores / (t.Sockets / t.NUMANodes)
}

// nodeBlocks is the range [first, end) of memory blocks on node n: blocks
// are split into contiguous, nearly equal ranges.
func (t topology) nodeBlocks(n int) (first, end int) {
	f := func(n int) int { return (n*t.MemBlocks + t.NUMANodes - 1) / t.NUMANodes }
	return f(n), f(n + 1)
}

// sameSocket reports whether NUMA nodes a and b share a socket.
func (t topology) sameSocket(a, b int) bool {
	k := t.NUMANodes / t.Sockets
	return k > 1 && a/k == b/k
}

// zone is the valid_zones of memory block i: a block below 4 GiB is DMA32
// (the first one also holds DMA, so it has none), one above is Normal.
func (t topology) zone(i int) kernfsim.Source {
	start, end := uint64(i)*t.MemBlockSize, uint64(i+1)*t.MemBlockSize
	switch {
	case start < 16<<20 || start < 4<<30 && end > 4<<30:
		return zoneNone
	case end <= 4<<30:
		return zoneDMA32
	}
	return zoneNormal
}

var (
	zoneNone   kernfsim.Source = kernfsim.Static("none\n")
	zoneDMA32  kernfsim.Source = kernfsim.Static("DMA32\n")
	zoneNormal kernfsim.Source = kernfsim.Static("Normal\n")
	srcZero    kernfsim.Source = kernfsim.Static("0\n")
	srcOne     kernfsim.Source = kernfsim.Static("1\n")
)

// bitmap is a set of n bits: CPUs, or NUMA nodes.
type bitmap struct {
	w []uint64
	n int
}

func newBitmap(n int) bitmap        { return bitmap{make([]uint64, (n+63)/64), n} }
func (s bitmap) add(cpu int)        { s.w[cpu/64] |= 1 << (cpu % 64) }
func (s bitmap) has(cpu int) bool   { return s.w[cpu/64]&(1<<(cpu%64)) != 0 }
func (s bitmap) chunk(j int) uint32 { return uint32(s.w[j/2] >> (32 * (j % 2))) }

// mask prints s as the kernel's "%*pb" (bitmap_string): hex in 32-bit
// chunks, most significant first, separated by commas; the first chunk is
// as wide as its bits need, the others 8 digits ("3" for 2 CPUs,
// "00,000000ff" for 40, "00000000,000000ff" for 64).
func (s bitmap) mask() string {
	chunks := (s.n + 31) / 32
	b := make([]byte, 0, chunks*9)
	for j := chunks - 1; j >= 0; j-- {
		width := 8
		if r := s.n % 32; j == chunks-1 && r != 0 {
			width = (r + 3) / 4
		}
		if j < chunks-1 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%0*x", width, s.chunk(j))
	}
	return string(b)
}

// list prints s as the kernel's "%*pbl" (bitmap_list_string): ranges
// "0-3,8-11", single CPUs alone, "" for none.
func (s bitmap) list() string {
	var b []byte
	for i := 0; i < s.n; i++ {
		if !s.has(i) {
			continue
		}
		j := i
		for j+1 < s.n && s.has(j+1) {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
		if j > i {
			b = strconv.AppendInt(append(b, '-'), int64(j), 10)
		}
		i = j
	}
	return string(b)
}

// cpumap is a CPU bitmap's two attributes, shared by every node showing it.
type cpumap struct{ mask, list kernfsim.Source }

func newCPUMap(s bitmap) cpumap {
	return cpumap{kernfsim.Static(s.mask() + "\n"), kernfsim.Static(s.list() + "\n")}
}

// ents is the mask and list attributes under the names given.
func (m cpumap) ents(maskName, listName string) []ent {
	return []ent{{maskName, roSrc(m.mask)}, {listName, roSrc(m.list)}}
}

// synth is the state of one synthetic sysfs: its topology, the CPU sets its
// attributes share, and the live state behind its writable attributes.
type synth struct {
	topology
	hotplug              *cpuHotplug
	blocks               []memBlock // one allocation for every block's state
	memNames             []string   // "memoryN", shared by the block, its node link and its bus link
	coreMaps             []cpumap   // by global core index
	socketMaps           []cpumap
	nodeMaps             []cpumap
	all                  cpumap
	nodeCPUs             [][]int
	nodeNames, nodePaths []string       // "nodeN", "devices/system/node/nodeN"
	seqnum               atomic.Uint64  // kernel/uevent_seqnum
	tree                 *kernfsim.Tree // what memory/probe adds blocks to
}

func newSynth(c SynthConfig) *synth {
	s := &synth{topology: topology{SynthConfig: c, cores: c.CPUs / (c.Sockets * c.ThreadsPerCore)}}
	s.hotplug = newCPUHotplug(c.CPUs)
	s.blocks = make([]memBlock, c.MemBlocks)
	s.memNames = make([]string, c.MemBlocks)
	for i := range s.blocks {
		s.blocks[i].index = uint32(i)
		s.blocks[i].online.Store(true)
		s.memNames[i] = "memory" + strconv.Itoa(i)
	}
	for n := range c.NUMANodes {
		s.nodeNames = append(s.nodeNames, "node"+itoa(n))
		s.nodePaths = append(s.nodePaths, nodePath(n))
	}
	s.cpuMaps()
	return s
}

// cpuMaps computes the CPU sets of every core, socket and node.
func (s *synth) cpuMaps() {
	sets := func(k int) []bitmap {
		v := make([]bitmap, k)
		for i := range v {
			v[i] = newBitmap(s.CPUs)
		}
		return v
	}
	cores, sockets, nodes, all := sets(s.allCores()), sets(s.Sockets), sets(s.NUMANodes), newBitmap(s.CPUs)
	s.nodeCPUs = make([][]int, s.NUMANodes)
	for cpu := range s.CPUs {
		cores[s.coreOf(cpu)].add(cpu)
		sockets[s.socketOf(cpu)].add(cpu)
		nodes[s.nodeOf(cpu)].add(cpu)
		all.add(cpu)
		s.nodeCPUs[s.nodeOf(cpu)] = append(s.nodeCPUs[s.nodeOf(cpu)], cpu)
	}
	maps := func(v []bitmap) []cpumap {
		m := make([]cpumap, len(v))
		for i := range v {
			m[i] = newCPUMap(v[i])
		}
		return m
	}
	s.coreMaps, s.socketMaps, s.nodeMaps, s.all = maps(cores), maps(sockets), maps(nodes), newCPUMap(all)
}

func (s *synth) countUevent(ev kernfsim.Event) {
	if ev.Node.Kind() == kernfsim.KindDir && (ev.Op == kernfsim.OpAdd || ev.Op == kernfsim.OpRemove) {
		s.seqnum.Add(1)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// root is the whole tree, as /sys lays it out.
func (s *synth) root() dir {
	return dir{
		{"block", dir{each(s.Disks, func(i int) (string, spec) { return s.diskName(i), link(s.diskPath(i)) })}},
		{"bus", s.busDir()},
		{"class", s.classDir()},
		{"dev", dir{{"block", dir{each(s.Disks, func(i int) (string, spec) {
			return fmt.Sprintf("259:%d", i), link(s.diskPath(i))
		})}}}},
		{"devices", dir{
			each(s.pciRoots(), s.pciRoot),
			{"system", dir{
				{"cpu", s.cpuDir()},
				{"memory", s.memoryDir()},
				{"node", s.nodeDir()},
			}},
			{"virtual", dir{{"net", dir{{"lo", s.loopback()}}}}},
		}},
		{"firmware", dir{}},
		{"fs", dir{{"cgroup", dir{}}}},
		{"kernel", s.kernelDir()},
		{"module", s.moduleDir()},
		{"power", dir{{"state", rwVal("freeze mem disk")}}},
	}
}

const cpuModalias = "MODALIAS=cpu:type:x86,ven0000fam0006mod006A:feature:,0000,0001,0002,0003,0004,0005,0006,0007,0008,0009\n"

// cpuDir is devices/system/cpu.
func (s *synth) cpuDir() dir {
	smt, control := "0", "notsupported"
	if s.ThreadsPerCore > 1 {
		smt, control = "1", "on"
	}
	return dir{
		{"kernel_max", ro(itoa(MaxSynthCPUs - 1))},
		{"possible", roSrc(s.all.list)},
		{"present", roSrc(s.all.list)},
		{"online", roSrc(kernfsim.NewFunc(func() string { return s.hotplug.list(true) }))},
		{"offline", roSrc(kernfsim.NewFunc(func() string { return s.hotplug.list(false) }))},
		{"isolated", ro("")},
		{"smt", dir{{"active", ro(smt)}, {"control", rwVal(control)}}},
		each(s.CPUs, s.cpu),
	}
}

// cpu is devices/system/cpu/cpuN. As on x86, cpu0 cannot go offline and
// has no online file.
func (s *synth) cpu(i int) (string, spec) {
	node := s.nodeOf(i)
	d := dir{
		{"cache", dir{each(len(cacheLevels), func(k int) (string, spec) {
			return "index" + itoa(k), s.cacheIndex(i, cacheLevels[k])
		})}},
		{s.nodeNames[node], link(s.nodePaths[node])},
		{"subsystem", link("bus/cpu")},
		{"topology", s.cpuTopology(i)},
		{"uevent", roSrc(kernfsim.Static(cpuModalias))},
	}
	if i > 0 {
		d = append(d, ent{"online", rw(cpuOnline{s.hotplug, i})})
	}
	return "cpu" + itoa(i), d
}

func nodePath(n int) string { return "devices/system/node/node" + itoa(n) }

// cpuTopology is cpuN/topology: one die per package, and a cluster is a
// core's threads (the CPUs sharing its L2).
func (s *synth) cpuTopology(cpu int) dir {
	core, pkg := s.coreMaps[s.coreOf(cpu)], s.socketMaps[s.socketOf(cpu)]
	d := dir{
		{"core_id", ro(itoa(s.coreOf(cpu) % s.cores))},
		{"physical_package_id", ro(itoa(s.socketOf(cpu)))},
		{"die_id", roSrc(srcZero)},
		{"cluster_id", ro(itoa(s.coreOf(cpu)))},
	}
	d = append(d, core.ents("core_cpus", "core_cpus_list")...)
	d = append(d, core.ents("thread_siblings", "thread_siblings_list")...)
	d = append(d, core.ents("cluster_cpus", "cluster_cpus_list")...)
	d = append(d, pkg.ents("package_cpus", "package_cpus_list")...)
	d = append(d, pkg.ents("core_siblings", "core_siblings_list")...)
	return append(d, pkg.ents("die_cpus", "die_cpus_list")...)
}

// cacheLevel is one cache a CPU sees; L1 and L2 are per core, L3 per socket.
type cacheLevel struct {
	level     int
	typ       string
	size      int // bytes; for the per-socket L3, per core of the socket
	ways      int
	perSocket bool
}

var cacheLevels = []cacheLevel{
	{1, "Data", 48 << 10, 12, false},
	{1, "Instruction", 32 << 10, 8, false},
	{2, "Unified", 2 << 20, 16, false},
	{3, "Unified", 1536 << 10, 12, true},
}

// cacheIndex is cpuN/cache/indexK. Cache ids are the global core index for
// per-core caches and the socket for L3.
func (s *synth) cacheIndex(cpu int, c cacheLevel) dir {
	size, shared, id := c.size, s.coreMaps[s.coreOf(cpu)], s.coreOf(cpu)
	if c.perSocket {
		size, shared, id = c.size*s.cores, s.socketMaps[s.socketOf(cpu)], s.socketOf(cpu)
	}
	return append(dir{
		{"coherency_line_size", ro("64")},
		{"id", ro(itoa(id))},
		{"level", ro(itoa(c.level))},
		{"number_of_sets", ro(itoa(size / (64 * c.ways)))},
		{"physical_line_partition", roSrc(srcOne)},
		{"size", ro(itoa(size>>10) + "K")},
		{"type", ro(c.typ)},
		{"ways_of_associativity", ro(itoa(c.ways))},
	}, shared.ents("shared_cpu_map", "shared_cpu_list")...)
}

// memoryDir is devices/system/memory.
func (s *synth) memoryDir() dir {
	return dir{
		{"auto_online_blocks", rwVal("online")},
		{"block_size_bytes", ro(strconv.FormatUint(s.MemBlockSize, 16))},
		{"hard_offline_page", wo()},
		{"probe", attr{0o200, memProbe{s}}},
		{"soft_offline_page", wo()},
		each(s.MemBlocks, s.memoryBlock),
	}
}

// memoryBlock is devices/system/memory/memoryN. Its attributes share one
// memBlock, so a block costs no allocation beyond its nodes.
func (s *synth) memoryBlock(i int) (string, spec) {
	return s.memNames[i], s.memoryBlockDir(&s.blocks[i], s.blockNode(i))
}

// memoryBlockDir is the directory of block b on NUMA node node.
func (s *synth) memoryBlockDir(b *memBlock, node int) dir {
	return dir{
		{"online", rw(memOnline{b})},
		{"phys_device", roSrc(srcZero)},
		{"phys_index", roSrc(memPhysIndex{b})},
		{"removable", roSrc(srcOne)},
		{"state", rw(memState{b})},
		{"subsystem", link("bus/memory")},
		{"valid_zones", roSrc(s.zone(int(b.index)))},
		{s.nodeNames[node], link(s.nodePaths[node])},
	}
}

// blockNode is memory block i's NUMA node (see nodeBlocks).
func (t topology) blockNode(i int) int { return i * t.NUMANodes / t.MemBlocks }

// nodeDir is devices/system/node. Every node has CPUs; a node has memory
// unless there are fewer memory blocks than nodes.
func (s *synth) nodeDir() dir {
	all, mem := newBitmap(s.NUMANodes), newBitmap(s.NUMANodes)
	for n := range s.NUMANodes {
		all.add(n)
		if first, end := s.nodeBlocks(n); end > first {
			mem.add(n)
		}
	}
	return dir{
		{"has_cpu", ro(all.list())},
		{"has_memory", ro(mem.list())},
		{"has_normal_memory", ro(mem.list())}, // DMA and DMA32 count as normal; no node is ZONE_MOVABLE only
		{"online", ro(all.list())},
		{"possible", ro(all.list())},
		each(s.NUMANodes, s.numaNode),
	}
}

// numaNode is devices/system/node/nodeN, with links to its CPUs and
// memory blocks.
func (s *synth) numaNode(n int) (string, spec) {
	first, end := s.nodeBlocks(n)
	cpus := s.nodeCPUs[n]
	return s.nodeNames[n], dir{
		{"compact", wo()},
		{"cpulist", roSrc(s.nodeMaps[n].list)},
		{"cpumap", roSrc(s.nodeMaps[n].mask)},
		{"distance", ro(s.distance(n))},
		{"meminfo", ro(s.meminfo(n, uint64(end-first)*s.MemBlockSize>>10))},
		{"numastat", roSrc(numastat)},
		{"subsystem", link("bus/node")},
		each(len(cpus), func(j int) (string, spec) { return s.cpuLink(cpus[j]) }),
		each(end-first, func(j int) (string, spec) { return s.memLink(first + j) }),
	}
}

// distance is node n's SLIT row: 10 to itself, 12 within its socket, 20
// across sockets.
func (s *synth) distance(n int) string {
	d := make([]string, s.NUMANodes)
	for m := range d {
		switch {
		case m == n:
			d[m] = "10"
		case s.sameSocket(m, n):
			d[m] = "12"
		default:
			d[m] = "20"
		}
	}
	return strings.Join(d, " ")
}

// meminfo is the start of node n's meminfo for total kB, in the kernel's
// layout.
func (s *synth) meminfo(n int, total uint64) string {
	used := total / 32
	return fmt.Sprintf("Node %d MemTotal:       %8d kB\nNode %d MemFree:        %8d kB\nNode %d MemUsed:        %8d kB",
		n, total, n, total-used, n, used)
}

var numastat kernfsim.Source = kernfsim.Static("numa_hit 0\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 0\nlocal_node 0\nother_node 0\n")

func (s *synth) cpuLink(i int) (string, spec) {
	return "cpu" + itoa(i), link("devices/system/cpu/cpu" + itoa(i))
}

func (s *synth) memLink(i int) (string, spec) {
	return s.memNames[i], link("devices/system/memory/" + s.memNames[i])
}

func (s *synth) nodeLink(n int) (string, spec) { return s.nodeNames[n], link(s.nodePaths[n]) }

// pciKind is what a PCI function is.
type pciKind struct {
	driver         string
	vendor, device int
	class          int
}

var (
	nicPCI  = pciKind{"ixgbe", 0x8086, 0x10fb, 0x020000}
	nvmePCI = pciKind{"nvme", 0x144d, 0xa80a, 0x010802}
)

// PCI functions are numbered k = 0.. over the NICs then the disks, 30 to a
// root bus (slots 0 and 1 are the host bridge's): function k is
// 0000:BB:DD.0 with BB = k/30 and DD = 2 + k%30, under devices/pci0000:BB,
// and on NUMA node k % NUMANodes.
const pciPerBus = 30

func (s *synth) pciRoots() int { return (s.Netdevs + s.Disks + pciPerBus - 1) / pciPerBus }

func (s *synth) pciRoot(bus int) (string, spec) {
	n := min(pciPerBus, s.Netdevs+s.Disks-bus*pciPerBus)
	return fmt.Sprintf("pci0000:%02x", bus), dir{each(n, func(j int) (string, spec) { return s.pciDevice(bus*pciPerBus + j) })}
}

func pciAddr(k int) string { return fmt.Sprintf("0000:%02x:%02x.0", k/pciPerBus, 2+k%pciPerBus) }

func pciPath(k int) string {
	return fmt.Sprintf("devices/pci0000:%02x/%s", k/pciPerBus, pciAddr(k))
}

func (s *synth) ethPath(i int) string         { return pciPath(i) + "/net/eth" + itoa(i) }
func (s *synth) nvmePath(i int) string        { return pciPath(s.Netdevs+i) + "/nvme/nvme" + itoa(i) }
func (s *synth) diskName(i int) string        { return "nvme" + itoa(i) + "n1" }
func (s *synth) diskPath(i int) string        { return s.nvmePath(i) + "/" + s.diskName(i) }
func (s *synth) pciLink(k int) (string, spec) { return pciAddr(k), link(pciPath(k)) }

// pciDevice is PCI function k: a NIC with its net/ethN, or an NVMe
// controller with its nvme/nvmeN.
func (s *synth) pciDevice(k int) (string, spec) {
	kind, child := nicPCI, ent{"net", dir{{"eth" + itoa(k), s.ethernet(k)}}}
	if i := k - s.Netdevs; i >= 0 {
		kind, child = nvmePCI, ent{"nvme", dir{{"nvme" + itoa(i), s.nvmeCtrl(i)}}}
	}
	node := k % s.NUMANodes
	return pciAddr(k), dir{
		{"class", ro(fmt.Sprintf("0x%06x", kind.class))},
		{"device", ro(fmt.Sprintf("0x%04x", kind.device))},
		{"driver", link("bus/pci/drivers/" + kind.driver)},
		{"enable", rwVal("1")},
		{"irq", ro(itoa(16 + k%16))},
		{"local_cpulist", roSrc(s.nodeMaps[node].list)},
		{"local_cpus", roSrc(s.nodeMaps[node].mask)},
		{"numa_node", ro(itoa(node))},
		{"subsystem", link("bus/pci")},
		{"uevent", ro(fmt.Sprintf("DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SLOT_NAME=%s",
			kind.driver, kind.class, kind.vendor, kind.device, pciAddr(k)))},
		{"vendor", ro(fmt.Sprintf("0x%04x", kind.vendor))},
		child,
	}
}

// netdev is one network interface's identity.
type netdev struct {
	name        string
	ifindex     int
	mac, bcast  string
	mtu         int
	flags, oper string
	typ         int    // ARPHRD_*
	device      string // the PCI function's path; "" for virtual devices
}

func (s *synth) loopback() dir {
	zero := "00:00:00:00:00:00"
	return netdevDir(netdev{"lo", 1, zero, zero, 65536, "0x9", "unknown", 772, ""})
}

// ethernet is ethN, ifindex N+2 (lo is 1), on PCI function N.
func (s *synth) ethernet(i int) dir {
	mac := fmt.Sprintf("00:1b:21:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff)
	return netdevDir(netdev{"eth" + itoa(i), i + 2, mac, "ff:ff:ff:ff:ff:ff", 1500, "0x1003", "up", 1, pciPath(i)})
}

func netdevDir(n netdev) dir {
	d := dir{
		{"addr_assign_type", roSrc(srcZero)},
		{"addr_len", ro("6")},
		{"address", ro(n.mac)},
		{"broadcast", ro(n.bcast)},
		{"carrier", rwVal("1")},
		{"dev_id", ro("0x0")},
		{"flags", rwVal(n.flags)},
		{"ifalias", rwVal("")},
		{"ifindex", ro(itoa(n.ifindex))},
		{"iflink", ro(itoa(n.ifindex))},
		{"mtu", rwVal(itoa(n.mtu))},
		{"operstate", ro(n.oper)},
		{"statistics", dir{
			{"rx_bytes", roSrc(srcZero)}, {"rx_errors", roSrc(srcZero)}, {"rx_packets", roSrc(srcZero)},
			{"tx_bytes", roSrc(srcZero)}, {"tx_errors", roSrc(srcZero)}, {"tx_packets", roSrc(srcZero)},
		}},
		{"subsystem", link("class/net")},
		{"tx_queue_len", rwVal("1000")},
		{"type", ro(itoa(n.typ))},
		{"uevent", ro(fmt.Sprintf("INTERFACE=%s\nIFINDEX=%d", n.name, n.ifindex))},
	}
	if n.device != "" {
		d = append(d, ent{"device", link(n.device)}, ent{"duplex", ro("full")}, ent{"speed", ro("10000")})
	}
	return d
}

// nvmeCtrl is the NVMe controller nvmeN, with its one namespace nvmeNn1.
func (s *synth) nvmeCtrl(i int) dir {
	return dir{
		{"dev", ro(fmt.Sprintf("240:%d", i))},
		{"device", link(pciPath(s.Netdevs + i))},
		{"firmware_rev", ro("2B2QEXM7")},
		{"model", ro("KERNFSIM NVMe SSD 1TB")},
		{"serial", ro(fmt.Sprintf("KFS%09d", i))},
		{"state", ro("live")},
		{"subsystem", link("class/nvme")},
		{"transport", ro("pcie")},
		{s.diskName(i), s.disk(i)},
	}
}

// disk is the block device nvmeNn1: 1 TB, block major 259 (blkext).
func (s *synth) disk(i int) dir {
	return dir{
		{"capability", roSrc(srcZero)},
		{"dev", ro(fmt.Sprintf("259:%d", i))},
		{"device", link(s.nvmePath(i))},
		{"ext_range", ro("256")},
		{"hidden", roSrc(srcZero)},
		{"queue", queueDir()},
		{"range", roSrc(srcZero)},
		{"removable", roSrc(srcZero)},
		{"ro", roSrc(srcZero)},
		{"size", ro("1953525168")},
		{"stat", roSrc(diskStat)},
		{"subsystem", link("class/block")},
		{"uevent", ro(fmt.Sprintf("MAJOR=259\nMINOR=%d\nDEVNAME=%s\nDEVTYPE=disk\nDISKSEQ=%d", i, s.diskName(i), i+1))},
	}
}

var diskStat kernfsim.Source = kernfsim.Static(strings.Repeat("       0 ", 16) + "       0\n")

func queueDir() dir {
	return dir{
		{"hw_sector_size", ro("512")},
		{"logical_block_size", ro("512")},
		{"max_hw_sectors_kb", ro("2048")},
		{"max_sectors_kb", rwVal("1280")},
		{"nomerges", rwVal("0")},
		{"nr_requests", rwVal("1023")},
		{"physical_block_size", ro("512")},
		{"read_ahead_kb", rwVal("128")},
		{"rotational", rwVal("0")},
		{"scheduler", rw(newChoice(0, "none", "mq-deadline", "kyber", "bfq"))},
	}
}

// busDir is bus/: each bus links its devices and its drivers' devices.
func (s *synth) busDir() dir {
	nics := each(s.Netdevs, s.pciLink)
	disks := each(s.Disks, func(i int) (string, spec) { return s.pciLink(s.Netdevs + i) })
	return dir{
		{"cpu", bus(each(s.CPUs, s.cpuLink), dir{{"processor", driver(each(s.CPUs, s.cpuLink), "")}})},
		{"memory", bus(each(s.MemBlocks, s.memLink), dir{})},
		{"node", bus(each(s.NUMANodes, s.nodeLink), dir{})},
		{"pci", bus(each(s.Netdevs+s.Disks, s.pciLink), dir{
			{nicPCI.driver, driver(nics, nicPCI.driver)},
			{nvmePCI.driver, driver(disks, nvmePCI.driver)},
		})},
	}
}

func bus(devices ent, drivers dir) dir {
	return dir{
		{"devices", dir{devices}},
		{"drivers", drivers},
		{"drivers_autoprobe", rwVal("1")},
		{"drivers_probe", wo()},
		{"uevent", wo()},
	}
}

func driver(devices ent, module string) dir {
	d := dir{{"bind", wo()}, {"new_id", wo()}, {"remove_id", wo()}, {"uevent", wo()}, {"unbind", wo()}, devices}
	if module != "" {
		d = append(d, ent{"module", link("module/" + module)})
	}
	return d
}

// classDir is class/: links to the devices of each class.
func (s *synth) classDir() dir {
	return dir{
		{"block", dir{each(s.Disks, func(i int) (string, spec) { return s.diskName(i), link(s.diskPath(i)) })}},
		{"net", dir{
			{"lo", link("devices/virtual/net/lo")},
			each(s.Netdevs, func(i int) (string, spec) { return "eth" + itoa(i), link(s.ethPath(i)) }),
		}},
		{"nvme", dir{each(s.Disks, func(i int) (string, spec) { return "nvme" + itoa(i), link(s.nvmePath(i)) })}},
	}
}

// kernelDir is kernel/.
func (s *synth) kernelDir() dir {
	return dir{
		{"fscaps", roSrc(srcOne)},
		{"kexec_loaded", roSrc(srcZero)},
		{"mm", dir{{"transparent_hugepage", dir{
			{"defrag", rw(newChoice(3, "always", "defer", "defer+madvise", "madvise", "never"))},
			{"enabled", rw(newChoice(1, "always", "madvise", "never"))},
			{"use_zero_page", rwVal("1")},
		}}}},
		{"profiling", rwVal("0")},
		{"rcu_expedited", rwVal("0")},
		{"rcu_normal", rwVal("0")},
		{"uevent_helper", rwVal("")},
		{"uevent_seqnum", roSrc(kernfsim.NewFunc(func() string { return strconv.FormatUint(s.seqnum.Load(), 10) + "\n" }))},
	}
}

// moduleDir is module/: loadable modules have an initstate, built-in ones
// only parameters.
func (s *synth) moduleDir() dir {
	return dir{
		{"ixgbe", module(true, ent{"allow_unsupported_sfp", param(0o444, "N")})},
		{"nvme", module(true, ent{"io_queue_depth", param(0o644, "1024")}, ent{"poll_queues", param(0o644, "0")})},
		{"nvme_core", module(true, ent{"io_timeout", param(0o644, "30")}, ent{"max_retries", param(0o644, "5")})},
		{"printk", module(false, ent{"console_suspend", param(0o644, "N")}, ent{"time", param(0o644, "Y")})},
		{"rcupdate", module(false, ent{"rcu_cpu_stall_timeout", param(0o644, "21")},
			ent{"rcu_expedited", param(0o444, "0")}, ent{"rcu_normal", param(0o444, "0")})},
		{"rcutree", module(false, ent{"blimit", param(0o444, "1000")}, ent{"jiffies_till_first_fqs", param(0o644, "3")})},
	}
}

func module(loadable bool, params ...ent) dir {
	d := dir{{"parameters", dir(params)}}
	if loadable {
		d = append(d, ent{"initstate", ro("live")}, ent{"refcnt", roSrc(srcZero)}, ent{"uevent", wo()})
	}
	return d
}

// writeOnly is a write-only attribute (mode 0200) that drops what is
// written.
type writeOnly struct{}

func (writeOnly) Show(context.Context, *bytes.Buffer) error { return nil }
func (writeOnly) Store(context.Context, []byte) error       { return nil }

// cpuHotplug is every CPU's online state, shared by cpuN/online and the
// cpu/online and cpu/offline lists.
type cpuHotplug struct{ online []atomic.Bool }

func newCPUHotplug(n int) *cpuHotplug {
	h := &cpuHotplug{online: make([]atomic.Bool, n)}
	for i := range h.online {
		h.online[i].Store(true)
	}
	return h
}

// list is the CPUs whose state is online, as a kernel list.
func (h *cpuHotplug) list(online bool) string {
	b := newBitmap(len(h.online))
	for i := range h.online {
		if h.online[i].Load() == online {
			b.add(i)
		}
	}
	return b.list() + "\n"
}

// cpuOnline is cpuN/online: "0" or "1"; a store takes what kstrtobool
// takes.
type cpuOnline struct {
	h   *cpuHotplug
	cpu int
}

func (c cpuOnline) Show(_ context.Context, buf *bytes.Buffer) error {
	buf.WriteString(boolDigit(c.h.online[c.cpu].Load()))
	return nil
}

func (c cpuOnline) Store(_ context.Context, data []byte) error {
	v, err := parseBool(data)
	if err == nil {
		c.h.online[c.cpu].Store(v)
	}
	return err
}

// memProbe is devices/system/memory/probe (CONFIG_ARCH_MEMORY_PROBE):
// writing a block-aligned physical address in hex hot-adds that block,
// offline, as a big machine's firmware does while udev coldplugs.
type memProbe struct{ s *synth }

func (p memProbe) Show(context.Context, *bytes.Buffer) error { return syscall.EACCES }

func (p memProbe) Store(ctx context.Context, data []byte) error {
	text := strings.TrimPrefix(strings.TrimSpace(string(data)), "0x")
	addr, err := strconv.ParseUint(text, 16, 64)
	self := kernfsim.StoreNode(ctx)
	if err != nil || addr%p.s.MemBlockSize != 0 || addr/p.s.MemBlockSize > math.MaxUint32 || self == nil {
		return syscall.EINVAL
	}
	idx := int(addr / p.s.MemBlockSize)
	node := 0
	if p.s.MemBlocks > 0 {
		node = min(p.s.blockNode(idx), p.s.NUMANodes-1)
	}
	b := &memBlock{index: uint32(idx)}
	return p.s.memoryBlockDir(b, node).add(newBuilder(p.s.tree), self.Parent(), "devices/system/memory", "memory"+strconv.Itoa(idx))
}

// memBlock is a memory block's state, shared by its attributes.
type memBlock struct {
	index  uint32
	online atomic.Bool
}

type (
	memOnline    struct{ b *memBlock } // "0" or "1"
	memState     struct{ b *memBlock } // "online" or "offline"
	memPhysIndex struct{ b *memBlock } // the block number, "%08x"
)

func (m memOnline) Show(_ context.Context, buf *bytes.Buffer) error {
	buf.WriteString(boolDigit(m.b.online.Load()))
	return nil
}

func (m memOnline) Store(_ context.Context, data []byte) error {
	v, err := parseBool(data)
	if err == nil {
		m.b.online.Store(v)
	}
	return err
}

func (m memState) Show(_ context.Context, buf *bytes.Buffer) error {
	if m.b.online.Load() {
		buf.WriteString("online\n")
	} else {
		buf.WriteString("offline\n")
	}
	return nil
}

func (m memState) Store(_ context.Context, data []byte) error {
	switch strings.TrimSpace(string(data)) {
	case "online", "online_kernel", "online_movable":
		m.b.online.Store(true)
	case "offline":
		m.b.online.Store(false)
	default:
		return syscall.EINVAL
	}
	return nil
}

func (m memPhysIndex) Show(_ context.Context, buf *bytes.Buffer) error {
	fmt.Fprintf(buf, "%08x\n", m.b.index)
	return nil
}

func boolDigit(v bool) string {
	if v {
		return "1\n"
	}
	return "0\n"
}

// parseBool is kstrtobool: 1/y/Y/on true, 0/n/N/off false, else EINVAL.
func parseBool(data []byte) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(string(data))) {
	case "1", "y", "yes", "on":
		return true, nil
	case "0", "n", "no", "off":
		return false, nil
	}
	return false, syscall.EINVAL
}

// choice is one of fixed options, shown as "a [b] c" like the block
// scheduler and transparent_hugepage files; a store must name an option.
type choice struct {
	opts []string
	cur  atomic.Int32
}

func newChoice(cur int, opts ...string) *choice {
	c := &choice{opts: opts}
	c.cur.Store(int32(cur))
	return c
}

func (c *choice) Show(_ context.Context, buf *bytes.Buffer) error {
	cur := int(c.cur.Load())
	for i, o := range c.opts {
		if i > 0 {
			buf.WriteByte(' ')
		}
		if i == cur {
			o = "[" + o + "]"
		}
		buf.WriteString(o)
	}
	buf.WriteByte('\n')
	return nil
}

func (c *choice) Store(_ context.Context, data []byte) error {
	i := slices.Index(c.opts, strings.TrimSpace(string(data)))
	if i < 0 {
		return syscall.EINVAL
	}
	c.cur.Store(int32(i))
	return nil
}
