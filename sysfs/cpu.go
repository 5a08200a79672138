package sysfs

import (
	"bytes"
	"context"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/kernfsim"
)

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

func (s *synth) cpuLink(i int) (string, spec) {
	return "cpu" + itoa(i), link("devices/system/cpu/cpu" + itoa(i))
}

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
