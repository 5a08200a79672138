package sysfs

import (
	"fmt"
	"strconv"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// topology numbers CPUs as Linux does on x86: the first thread of every
// core, socket by socket, then the second thread of every core, and so on.
// So with 2 sockets of 16 cores, cpu0 and cpu32 are thread siblings.
type topology struct {
	SynthConfig
	cores int // cores per socket
}

func (t topology) allCores() int { return t.Sockets * t.cores }

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

func newBitmap(n int) bitmap { return bitmap{make([]uint64, (n+63)/64), n} }

func (s bitmap) add(cpu int) { s.w[cpu/64] |= 1 << (cpu % 64) }

func (s bitmap) has(cpu int) bool { return s.w[cpu/64]&(1<<(cpu%64)) != 0 }

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

// blockNode is memory block i's NUMA node (see nodeBlocks).
func (t topology) blockNode(i int) int { return i * t.NUMANodes / t.MemBlocks }
