package sysfs

import (
	"fmt"
	"strings"

	"github.com/kernfsim/kernfsim/kernfsim"
)

func nodePath(n int) string { return "devices/system/node/node" + itoa(n) }

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
		eachLink(end-first, memoryPath, func(j int) string { return s.memNames[first+j] }),
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

func (s *synth) nodeLink(n int) (string, spec) { return s.nodeNames[n], link(s.nodePaths[n]) }
