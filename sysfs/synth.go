package sysfs

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/internal/setting"
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
	// Cgroups is the containers of a Kubernetes node's cgroup v2
	// hierarchy under fs/cgroup, two to a pod (cgroup.go); default 0,
	// none: the real /sys/fs/cgroup is a mount of its own, and a sysfs
	// has the directory empty.
	Cgroups int
}

// Limits on a SynthConfig, so that nobody builds 10^9 nodes by mistake.
// The largest config allowed is about 12 million nodes (some 2 GiB of heap).
const (
	MaxSynthCPUs      = 8192    // x86_64's largest NR_CPUS; kernel_max is MaxSynthCPUs-1
	MaxSynthThreads   = 8       // ThreadsPerCore
	MaxSynthNUMANodes = 1024    // MAX_NUMNODES with NODES_SHIFT=10
	MaxSynthMemBlocks = 1 << 20 // 128 TiB of 128 MiB blocks, about 11.5 million nodes
	MaxSynthDevices   = 1024    // each of Netdevs and Disks
	MaxSynthCgroups   = 65536   // containers, some 100,000 cgroups of 57 files each
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
	Valid string // what it must be, naming fields as {Field} (package setting)
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("synthetic sysfs: %s = %v: %s", e.Field, e.Value, setting.Names(nil).Put(e.Valid))
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
		{"Sockets", c.Sockets, in(c.Sockets, 1, c.CPUs), rng(1, c.CPUs) + " (at most {CPUs})"},
		{"ThreadsPerCore", c.ThreadsPerCore, in(c.ThreadsPerCore, 1, MaxSynthThreads), rng(1, MaxSynthThreads)},
		{"CPUs", c.CPUs, func() bool { return c.CPUs%(c.Sockets*c.ThreadsPerCore) == 0 },
			fmt.Sprintf("must be a multiple of {Sockets} x {ThreadsPerCore} = %d", c.Sockets*c.ThreadsPerCore)},
		{"NUMANodes", c.NUMANodes, in(c.NUMANodes, 1, MaxSynthNUMANodes), rng(1, MaxSynthNUMANodes)},
		{"NUMANodes", c.NUMANodes, func() bool {
			k := c.NUMANodes / c.Sockets
			return c.Sockets%c.NUMANodes == 0 || c.NUMANodes%c.Sockets == 0 && cores()%k == 0
		}, fmt.Sprintf("must divide {Sockets} (%d), or be a multiple of it whose share per socket divides the %d cores per socket",
			c.Sockets, cores())},
		{"MemBlocks", c.MemBlocks, in(c.MemBlocks, 0, MaxSynthMemBlocks), rng(0, MaxSynthMemBlocks)},
		{"MemBlockSize", c.MemBlockSize, func() bool {
			s := c.MemBlockSize
			return s >= MinSynthBlockSize && s <= MaxSynthBlockSize && s&(s-1) == 0
		}, fmt.Sprintf("must be a power of two from %d (16 MiB) to %d (16 GiB)", MinSynthBlockSize, uint64(MaxSynthBlockSize))},
		{"Netdevs", c.Netdevs, in(c.Netdevs, 0, MaxSynthDevices), rng(0, MaxSynthDevices)},
		{"Disks", c.Disks, in(c.Disks, 0, MaxSynthDevices), rng(0, MaxSynthDevices)},
		{"Cgroups", c.Cgroups, in(c.Cgroups, 0, MaxSynthCgroups), rng(0, MaxSynthCgroups)},
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
	s.memNames = nil // the nodes hold the names now
	s.seqnum.Store(uint64(b.dirs))
	t.Subscribe(s.countUevent)
	return nil
}

// synth is the state of one synthetic sysfs: its topology, the CPU sets its
// attributes share, and the live state behind its writable attributes.
type synth struct {
	topology
	hotplug              *cpuHotplug
	blocks               []memBlock // one allocation for every block's state
	memNames             []string   // "memoryN", shared by the block, its node link and its bus link; nil once built
	coreMaps             []cpumap   // by global core index
	socketMaps           []cpumap
	nodeMaps             []cpumap
	all                  cpumap
	nodeCPUs             [][]int
	nodeNames, nodePaths []string       // "nodeN", "devices/system/node/nodeN"
	nodeLinks            []spec         // link(nodePaths[n])
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
		s.nodeLinks = append(s.nodeLinks, link(s.nodePaths[n]))
	}
	s.cpuMaps()
	return s
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
		{"fs", dir{{"cgroup", s.cgroupDir()}}},
		{"kernel", s.kernelDir()},
		{"module", s.moduleDir()},
		{"power", dir{{"state", rwVal("freeze mem disk")}}},
	}
}
