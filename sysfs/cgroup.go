package sysfs

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// The cgroup v2 hierarchy of a Kubernetes node (systemd cgroup driver,
// containerd), with SynthConfig.Cgroups containers in it, under fs/cgroup
// as /sys/fs/cgroup is:
//
//	fs/cgroup/                                       the root cgroup
//	  kubepods.slice/
//	    kubepods-burstable.slice/
//	      kubepods-burstable-pod<uid>.slice/         a pod
//	        cri-containerd-<id>.scope/               its containers
//	    kubepods-besteffort.slice/
//	      kubepods-besteffort-pod<uid>.slice/
//	        cri-containerd-<id>.scope/
//
// Containers go two to a pod (its sandbox and one application, as
// containerd runs a pod), the pods alternately burstable and besteffort.
// Every cgroup below the root has the interface files of a cgroup whose
// parent enables the cpuset, cpu, io, memory, hugetlb and pids
// controllers, as kubelet enables them (hugetlb's per-size files left
// out). What a node agent reads (memory.stat, cpu.stat, io.stat,
// cgroup.procs, memory.current) is in the kernel's formats, with figures
// that agree with each other: memory.current is anon + file + kernel +
// sock, kernel its parts, slab the two slab counters, the LRU lists anon
// + shmem and file - shmem, usage_usec user + system. A cgroup's figures
// derive from its serial number and stay the same from read to read (so
// testing/fstest takes the tree); they are formatted at each read, as the
// kernel's show functions do. bus/kernfsim/new_cgroup and delete_cgroup
// make and remove cgroups as mkdir(2) and rmdir(2) there would
// (cgroup_abi.go).
//
// The real /sys/fs/cgroup is a mount of its own, so a sysfs has fs/cgroup
// empty; by default (Cgroups 0) the synthetic one does too.

// cgroupControllers are the hierarchy's controllers, which every parent
// enables for its children.
const cgroupControllers = "cpuset cpu io memory hugetlb pids"

// cgroupHierarchy is what every cgroup's files share. It is also the
// contents of the root's cgroup.controllers, by which the in-tree ABI
// finds the hierarchy.
type cgroupHierarchy struct {
	devs   []string      // immutable: the block devices' MAJ:MIN, as io.stat names them
	cpus   string        // immutable: cpuset.cpus.effective, "0-63"
	mems   string        // immutable: cpuset.mems.effective, "0-1"
	serial atomic.Uint64 // the last cgroup's serial number
}

func (h *cgroupHierarchy) Show(_ context.Context, buf *bytes.Buffer) error {
	buf.WriteString(cgroupControllers + "\n")
	return nil
}

// cgroupHierarchyOf is the hierarchy under fs/cgroup of t, or nil if t
// has none (fs/cgroup missing or empty, as a host mirror's).
func cgroupHierarchyOf(t *kernfsim.Tree) (*kernfsim.Node, *cgroupHierarchy) {
	root, err := lookupPath(t, "fs/cgroup")
	if err != nil {
		return nil, nil
	}
	n, err := t.Lookup(root, "cgroup.controllers")
	if err != nil {
		return nil, nil
	}
	h, _ := n.Source().(*cgroupHierarchy)
	if h == nil {
		return nil, nil
	}
	return root, h
}

// lookupPath is the node at path below t's root.
func lookupPath(t *kernfsim.Tree, path string) (*kernfsim.Node, error) {
	n := t.Root()
	for _, name := range strings.Split(path, "/") {
		var err error
		if n, err = t.Lookup(n, name); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// cgroup is one cgroup's figures, which its stat files show.
type cgroup struct {
	h           *cgroupHierarchy
	serial      uint64 // immutable: what the figures derive from
	procs       int    // immutable: processes in it (only a container has any)
	descendants int    // immutable: cgroups below it when it was made
	root        bool   // immutable: the root cgroup (cpu.stat without bandwidth)
}

// newCgroup is the next cgroup of h.
func (h *cgroupHierarchy) newCgroup(procs, descendants int) *cgroup {
	return &cgroup{h: h, serial: h.serial.Add(1), procs: procs, descendants: descendants}
}

// fig is c's figure k: a number below limit.
func (c *cgroup) fig(k, limit uint64) uint64 { return mix64(c.serial*1_000_003+k) % limit }

// mix64 is splitmix64's finalizer: a well-spread number from x.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// cgroupFile is one interface file of a cgroup below the root: its source
// made for the cgroup (a static one shared by every cgroup).
type cgroupFile struct {
	name string
	mode fs.FileMode
	src  func(*cgroup) kernfsim.Source
}

func cgStatic(s string) func(*cgroup) kernfsim.Source {
	src := kernfsim.Static(s)
	return func(*cgroup) kernfsim.Source { return src }
}

// cgValue is a setting of the cgroup's own, writable.
func cgValue(s string) func(*cgroup) kernfsim.Source {
	return func(*cgroup) kernfsim.Source { return kernfsim.NewValue(s) }
}

func cgWriteOnly(*cgroup) kernfsim.Source { return writeOnly{} }

const cgPressure = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

// cgroupFiles are a cgroup's interface files, in name order, with the
// kernel's modes (Linux 6.x, cgroup.c and the controllers' cftypes).
var cgroupFiles = []cgroupFile{
	{"cgroup.controllers", 0o444, cgStatic(cgroupControllers + "\n")},
	{"cgroup.events", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(c.events()) }},
	{"cgroup.freeze", 0o644, cgValue("0\n")},
	{"cgroup.kill", 0o200, cgWriteOnly},
	{"cgroup.max.depth", 0o644, newCgLimit},
	{"cgroup.max.descendants", 0o644, newCgLimit},
	{"cgroup.pressure", 0o644, cgValue("1\n")},
	{"cgroup.procs", 0o644, func(c *cgroup) kernfsim.Source { return cgroupProcs{c} }},
	{"cgroup.stat", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(c.stat()) }},
	{"cgroup.subtree_control", 0o644, func(c *cgroup) kernfsim.Source { return kernfsim.NewValue(c.subtreeControl()) }},
	{"cgroup.threads", 0o644, func(c *cgroup) kernfsim.Source { return cgroupProcs{c} }},
	{"cgroup.type", 0o644, cgValue("domain\n")},
	{"cpu.idle", 0o644, cgValue("0\n")},
	{"cpu.max", 0o644, cgValue("max 100000\n")},
	{"cpu.max.burst", 0o644, cgValue("0\n")},
	{"cpu.pressure", 0o644, cgStatic(cgPressure)},
	{"cpu.stat", 0o444, func(c *cgroup) kernfsim.Source { return cpuStat{c} }},
	{"cpu.uclamp.max", 0o644, cgValue("max\n")},
	{"cpu.uclamp.min", 0o644, cgValue("0.00\n")},
	{"cpu.weight", 0o644, cgValue("100\n")},
	{"cpu.weight.nice", 0o644, cgValue("0\n")},
	{"cpuset.cpus", 0o644, cgValue("\n")},
	{"cpuset.cpus.effective", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(c.h.cpus + "\n") }},
	{"cpuset.cpus.exclusive", 0o644, cgValue("\n")},
	{"cpuset.cpus.exclusive.effective", 0o444, cgStatic("\n")},
	{"cpuset.cpus.partition", 0o644, cgValue("member\n")},
	{"cpuset.mems", 0o644, cgValue("\n")},
	{"cpuset.mems.effective", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(c.h.mems + "\n") }},
	{"io.max", 0o644, cgValue("")},
	{"io.pressure", 0o644, cgStatic(cgPressure)},
	{"io.prio.class", 0o644, cgValue("no-change\n")},
	{"io.stat", 0o444, func(c *cgroup) kernfsim.Source { return ioStat{c} }},
	{"io.weight", 0o644, cgValue("default 100\n")},
	{"memory.current", 0o444, func(c *cgroup) kernfsim.Source { return memoryCurrent{c} }},
	{"memory.events", 0o444, cgStatic("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")},
	{"memory.events.local", 0o444, cgStatic("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")},
	{"memory.high", 0o644, cgValue("max\n")},
	{"memory.low", 0o644, cgValue("0\n")},
	{"memory.max", 0o644, cgValue("max\n")},
	{"memory.min", 0o644, cgValue("0\n")},
	{"memory.oom.group", 0o644, cgValue("0\n")},
	{"memory.peak", 0o644, func(c *cgroup) kernfsim.Source { return kernfsim.Static(strconv.FormatUint(c.peak(), 10) + "\n") }},
	{"memory.pressure", 0o644, cgStatic(cgPressure)},
	{"memory.reclaim", 0o200, cgWriteOnly},
	{"memory.stat", 0o444, func(c *cgroup) kernfsim.Source { return memoryStat{c} }},
	{"memory.swap.current", 0o444, cgStatic("0\n")},
	{"memory.swap.events", 0o444, cgStatic("high 0\nmax 0\nfail 0\n")},
	{"memory.swap.high", 0o644, cgValue("max\n")},
	{"memory.swap.max", 0o644, cgValue("max\n")},
	{"memory.swap.peak", 0o644, cgStatic("0\n")},
	{"memory.zswap.current", 0o444, cgStatic("0\n")},
	{"memory.zswap.max", 0o644, cgValue("max\n")},
	{"memory.zswap.writeback", 0o644, cgValue("1\n")},
	{"pids.current", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(strconv.Itoa(c.procs) + "\n") }},
	{"pids.events", 0o444, cgStatic("max 0\n")},
	{"pids.max", 0o644, cgValue("max\n")},
	{"pids.peak", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(strconv.Itoa(c.procs) + "\n") }},
}

// cgroupRootFiles are the root cgroup's: the core files and the
// controllers' that the root has.
var cgroupRootFiles = []cgroupFile{
	{"cgroup.controllers", 0o444, func(c *cgroup) kernfsim.Source { return c.h }},
	{"cgroup.max.depth", 0o644, newCgLimit},
	{"cgroup.max.descendants", 0o644, newCgLimit},
	{"cgroup.pressure", 0o644, cgValue("1\n")},
	{"cgroup.procs", 0o644, func(c *cgroup) kernfsim.Source { return cgroupProcs{c} }},
	{"cgroup.stat", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(c.stat()) }},
	{"cgroup.subtree_control", 0o644, cgValue(cgroupControllers + "\n")},
	{"cgroup.threads", 0o644, func(c *cgroup) kernfsim.Source { return cgroupProcs{c} }},
	{"cpu.pressure", 0o644, cgStatic(cgPressure)},
	{"cpu.stat", 0o444, func(c *cgroup) kernfsim.Source { return cpuStat{c} }},
	{"cpuset.cpus.effective", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(c.h.cpus + "\n") }},
	{"cpuset.cpus.isolated", 0o444, cgStatic("\n")},
	{"cpuset.mems.effective", 0o444, func(c *cgroup) kernfsim.Source { return kernfsim.Static(c.h.mems + "\n") }},
	{"io.pressure", 0o644, cgStatic(cgPressure)},
	{"io.stat", 0o444, func(c *cgroup) kernfsim.Source { return ioStat{c} }},
	{"memory.pressure", 0o644, cgStatic(cgPressure)},
	{"memory.reclaim", 0o200, cgWriteOnly},
	{"memory.stat", 0o444, func(c *cgroup) kernfsim.Source { return memoryStat{c} }},
}

// dir is cgroup c's directory, for the synthetic tree: files, then the
// child cgroups.
func (c *cgroup) dir(files []cgroupFile, children ...ent) dir {
	d := make(dir, 0, len(files)+len(children))
	for _, f := range files {
		d = append(d, ent{f.name, attr{f.mode, f.src(c)}})
	}
	return append(d, children...)
}

// entries are c's files, for a cgroup the ABI makes.
func (c *cgroup) entries() []kernfsim.BatchEntry {
	out := make([]kernfsim.BatchEntry, len(cgroupFiles))
	for i, f := range cgroupFiles {
		out[i] = kernfsim.BatchEntry{Name: f.name, Spec: kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: f.mode, Source: f.src(c)}}
	}
	return out
}

// cgroupDir is fs/cgroup: the root cgroup and kubepods.slice, or nothing
// without Cgroups.
func (s *synth) cgroupDir() dir {
	if s.Cgroups == 0 {
		return dir{}
	}
	h := &cgroupHierarchy{cpus: rangeList(s.CPUs), mems: rangeList(s.NUMANodes)}
	for i := range s.Disks {
		h.devs = append(h.devs, fmt.Sprintf("259:%d", i))
	}
	pods := (s.Cgroups + 1) / 2
	burstable, besteffort := (pods+1)/2, pods/2
	root := &cgroup{h: h, descendants: 3 + pods + s.Cgroups, root: true}
	kubepods := h.newCgroup(0, 2+pods+s.Cgroups).dir(cgroupFiles,
		s.qosSlice(h, "burstable", burstable, 0),
		s.qosSlice(h, "besteffort", besteffort, 1))
	return root.dir(cgroupRootFiles, ent{"kubepods.slice", kubepods})
}

// qosSlice is kubepods-CLASS.slice with n pods: pods first, first+2, ...
func (s *synth) qosSlice(h *cgroupHierarchy, class string, n, first int) ent {
	c := h.newCgroup(0, n)
	pods := each(n, func(i int) (string, spec) {
		p := first + 2*i
		return "kubepods-" + class + "-pod" + podUID(p) + ".slice", s.pod(h, p)
	})
	return ent{"kubepods-" + class + ".slice", c.dir(cgroupFiles, pods)}
}

// pod is pod p's slice: containers 2p and 2p+1 (the sandbox, then the
// application), those below Cgroups.
func (s *synth) pod(h *cgroupHierarchy, p int) dir {
	n := min(2, s.Cgroups-2*p)
	c := h.newCgroup(0, n)
	return c.dir(cgroupFiles, each(n, func(i int) (string, spec) {
		k := 2*p + i
		return "cri-containerd-" + containerID(k) + ".scope", h.newCgroup(1+2*i, 0).dir(cgroupFiles)
	}))
}

// podUID is pod p's UID as systemd writes it in a slice's name, its
// dashes escaped to underscores.
func podUID(p int) string {
	x, y := mix64(uint64(p)<<1), mix64(uint64(p)<<1|1)
	return fmt.Sprintf("%08x_%04x_%04x_%04x_%012x", x>>32, x>>16&0xffff, 0x4000|x&0x0fff, 0x8000|y>>48&0x3fff, y&0xffffffffffff)
}

// containerID is container k's ID: 64 hexadecimal digits, as containerd's.
func containerID(k int) string {
	var b []byte
	for j := range 4 {
		b = fmt.Appendf(b, "%016x", mix64(uint64(1)<<40|uint64(k)<<2|uint64(j)))
	}
	return string(b)
}

// rangeList is "0-(n-1)", or "0" for one.
func rangeList(n int) string {
	if n <= 1 {
		return "0"
	}
	return "0-" + strconv.Itoa(n-1)
}
