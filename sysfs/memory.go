package sysfs

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// memoryPath is where the memory blocks are.
const memoryPath = "devices/system/memory"

// memoryDir is devices/system/memory.
func (s *synth) memoryDir() dir {
	return dir{
		{"auto_online_blocks", rwVal("online")},
		{"block_size_bytes", ro(strconv.FormatUint(s.MemBlockSize, 16))},
		{"hard_offline_page", wo()},
		{"probe", attr{0o200, memProbe{s}}},
		{"soft_offline_page", wo()},
		eachDir(s.MemBlocks, s.memName, s.memoryBlock),
	}
}

// memName is memory block i's name, "memoryN", made once for the block's
// directory and the two links to it.
func (s *synth) memName(i int) string { return s.memNames[i] }

// memoryBlock appends the entries of devices/system/memory/memoryN to d.
// Its attributes share one memBlock, so a block costs no allocation beyond
// its nodes and its three sources' specs.
func (s *synth) memoryBlock(i int, d dir) dir {
	return s.memoryBlockDir(d, &s.blocks[i], s.blockNode(i))
}

// memoryBlockDir appends the entries of the directory of block b on NUMA
// node node to d. What blocks share is one spec made once (memShared), as
// a spec made per block costs an allocation per block.
func (s *synth) memoryBlockDir(d dir, b *memBlock, node int) dir {
	return append(d, dir{
		{"online", rw(memOnline{b})},
		{"phys_device", memShared.zero},
		{"phys_index", roSrc(memPhysIndex{b})},
		{"removable", memShared.one},
		{"state", rw(memState{b})},
		{"subsystem", memShared.bus},
		{"valid_zones", memShared.zone(s.zone(int(b.index)))},
		{s.nodeNames[node], s.nodeLinks[node]},
	}...)
}

// memSpecs are the specs every memory block has the same.
type memSpecs struct {
	zero, one, bus      spec
	none, dma32, normal spec
}

var memShared = memSpecs{
	zero: roSrc(srcZero), one: roSrc(srcOne), bus: link("bus/memory"),
	none: roSrc(zoneNone), dma32: roSrc(zoneDMA32), normal: roSrc(zoneNormal),
}

// zone is the valid_zones spec of a zone's source (topology.zone).
func (m memSpecs) zone(src kernfsim.Source) spec {
	switch src {
	case zoneNone:
		return m.none
	case zoneDMA32:
		return m.dma32
	}
	return m.normal
}

// memProbe is devices/system/memory/probe (CONFIG_ARCH_MEMORY_PROBE):
// writing a block-aligned physical address in hex hot-adds that block,
// offline, as a big machine's firmware does while udev coldplugs.
type memProbe struct{ s *synth }

func (p memProbe) Show(context.Context, *bytes.Buffer) error { return syscall.EACCES }

func (p memProbe) Store(ctx context.Context, data []byte) error {
	text := strings.TrimPrefix(strings.TrimSpace(string(data)), "0x")
	addr, err := strconv.ParseUint(text, 16, 64)
	self := kernfsim.StoringNode(ctx)
	if err != nil || addr%p.s.MemBlockSize != 0 || addr/p.s.MemBlockSize > math.MaxUint32 || self == nil {
		return syscall.EINVAL
	}
	idx := int(addr / p.s.MemBlockSize)
	node := 0
	if p.s.MemBlocks > 0 {
		node = min(p.s.blockNode(idx), p.s.NUMANodes-1)
	}
	b := &memBlock{index: uint32(idx)}
	return p.s.memoryBlockDir(nil, b, node).add(newBuilder(p.s.tree), self.Parent(), memoryPath, "memory"+strconv.Itoa(idx))
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
