package sysfs

import (
	"bytes"
	"context"
	"strconv"
)

// The stat files of a cgroup (cgroup.go), in the kernel's formats: flat
// keyed memory.stat and cpu.stat, nested keyed io.stat, one value a line
// in cgroup.procs and memory.current.

// memoryStatKeys are memory.stat's keys in the order Linux 6.10-6.12
// print them (mm/memcontrol.c: memory_stats[], with "slab" after
// slab_unreclaimable, then pgscan, pgsteal and memcg_vm_event_stat[]),
// on a kernel with swap, zswap and transparent huge pages, NUMA balancing
// off and hugetlb not charged to memory.
var memoryStatKeys = [...]string{
	"anon", "file", "kernel", "kernel_stack", "pagetables", "sec_pagetables", "percpu", "sock", "vmalloc", "shmem",
	"zswap", "zswapped", "file_mapped", "file_dirty", "file_writeback", "swapcached", "anon_thp", "file_thp", "shmem_thp",
	"inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable",
	"slab_reclaimable", "slab_unreclaimable", "slab",
	"workingset_refault_anon", "workingset_refault_file", "workingset_activate_anon", "workingset_activate_file",
	"workingset_restore_anon", "workingset_restore_file", "workingset_nodereclaim",
	"pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged",
	"pgscan", "pgsteal", "pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged", "pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged",
	"pgfault", "pgmajfault", "pgrefill", "pgactivate", "pgdeactivate", "pglazyfree", "pglazyfreed",
	"zswpin", "zswpout", "zswpwb", "thp_fault_alloc", "thp_collapse_alloc", "thp_swpout", "thp_swpout_fallback",
}

const pageSize = 4096

// memory is c's memory.stat figures, in memoryStatKeys' order: bytes for
// the state (pages times the page size where the kernel counts pages),
// counts for the events.
func (c *cgroup) memory() [len(memoryStatKeys)]uint64 {
	pages := func(k, limit uint64) uint64 { return c.fig(k, limit) * pageSize }
	anon, shmem := pages(0, 1<<16), pages(1, 1<<10)
	file := shmem + pages(2, 1<<16)
	stack, tables, percpu := (c.fig(3, 64)+1)*16<<10, pages(4, 1<<8), c.fig(5, 1<<20)
	slabR, slabU, vmalloc := c.fig(6, 1<<24), c.fig(7, 1<<24), pages(8, 1<<6)
	kernel := stack + tables + percpu + slabR + slabU + vmalloc
	inAnon := (anon + shmem) / pageSize / 3 * pageSize
	inFile := (file - shmem) / pageSize / 2 * pageSize
	scanK, scanD := c.fig(10, 100_000), c.fig(11, 10_000)
	stealK, stealD := scanK/2, scanD/2
	const thp = 2 << 20
	return [...]uint64{
		anon, file, kernel, stack, tables, 0, percpu, c.sock(), vmalloc, shmem,
		0, 0, file / 4 / pageSize * pageSize, pages(12, 64), 0, 0, anon / thp / 2 * thp, 0, 0,
		inAnon, anon + shmem - inAnon, inFile, file - shmem - inFile, 0,
		slabR, slabU, slabR + slabU,
		c.fig(13, 1000), c.fig(14, 10_000), c.fig(15, 1000), c.fig(16, 10_000), 0, c.fig(17, 1000), 0,
		0, 0, 0,
		scanK + scanD, stealK + stealD, scanK, scanD, 0, stealK, stealD, 0,
		c.fig(18, 10_000_000), c.fig(19, 10_000), c.fig(20, 100_000), c.fig(21, 100_000), c.fig(22, 100_000), 0, 0,
		0, 0, 0, c.fig(23, 1000), 0, 0, 0,
	}
}

// sock is the socket memory charged to c, in bytes (pages).
func (c *cgroup) sock() uint64 { return c.fig(9, 16) * pageSize }

// current is memory.current: what memory.stat's anon, file, kernel and
// sock add up to.
func (c *cgroup) current() uint64 {
	m := c.memory()
	return m[0] + m[1] + m[2] + m[7]
}

// peak is memory.peak, at least memory.current.
func (c *cgroup) peak() uint64 { return c.current() + c.fig(24, 1<<10)*pageSize }

// cpu is cpu.stat's figures: usage, user and system microseconds, then
// the bandwidth figures (periods, throttled periods, throttled
// microseconds).
func (c *cgroup) cpu() (usage, user, system, periods, throttled, throttledUsec uint64) {
	user, system = c.fig(30, 1<<36), c.fig(31, 1<<34)
	periods = c.fig(32, 1_000_000)
	throttled = periods / (c.fig(33, 16) + 2)
	return user + system, user, system, periods, throttled, throttled * c.fig(34, 10_000)
}

// io is device i's io.stat figures: bytes and I/Os read and written.
func (c *cgroup) io(i int) (rbytes, wbytes, rios, wios uint64) {
	k := 100 + 4*uint64(i)
	rios, wios = c.fig(k, 1_000_000), c.fig(k+1, 1_000_000)
	return rios * pageSize * (1 + c.fig(k+2, 8)), wios * pageSize * (1 + c.fig(k+3, 8)), rios, wios
}

// pid is c's k-th process: distinct across the hierarchy.
func (c *cgroup) pid(k int) uint64 { return 1000 + 4*c.serial + uint64(k) }

func (c *cgroup) events() string {
	populated := "0"
	if c.procs > 0 || c.descendants > 0 {
		populated = "1"
	}
	return "populated " + populated + "\nfrozen 0\n"
}

func (c *cgroup) stat() string {
	return "nr_descendants " + strconv.Itoa(c.descendants) + "\nnr_dying_descendants 0\n"
}

// subtreeControl enables every controller for the children a cgroup was
// made with; a container's, and a cgroup the ABI makes, enable none.
func (c *cgroup) subtreeControl() string {
	if c.descendants > 0 {
		return cgroupControllers + "\n"
	}
	return ""
}

// writeKV writes "key value\n".
func writeKV(buf *bytes.Buffer, key string, v uint64) {
	buf.WriteString(key)
	buf.WriteByte(' ')
	buf.Write(strconv.AppendUint(buf.AvailableBuffer(), v, 10))
	buf.WriteByte('\n')
}

// writeSub writes " key=value".
func writeSub(buf *bytes.Buffer, key string, v uint64) {
	buf.WriteByte(' ')
	buf.WriteString(key)
	buf.WriteByte('=')
	buf.Write(strconv.AppendUint(buf.AvailableBuffer(), v, 10))
}

type (
	memoryStat    struct{ c *cgroup } // memory.stat
	memoryCurrent struct{ c *cgroup } // memory.current
	cpuStat       struct{ c *cgroup } // cpu.stat
	ioStat        struct{ c *cgroup } // io.stat
	cgroupProcs   struct{ c *cgroup } // cgroup.procs and cgroup.threads
)

func (m memoryStat) Show(_ context.Context, buf *bytes.Buffer) error {
	v := m.c.memory()
	for i, k := range memoryStatKeys {
		writeKV(buf, k, v[i])
	}
	return nil
}

func (m memoryCurrent) Show(_ context.Context, buf *bytes.Buffer) error {
	buf.Write(strconv.AppendUint(buf.AvailableBuffer(), m.c.current(), 10))
	buf.WriteByte('\n')
	return nil
}

// Show writes cpu.stat; the root's has no bandwidth figures.
func (s cpuStat) Show(_ context.Context, buf *bytes.Buffer) error {
	usage, user, system, periods, throttled, throttledUsec := s.c.cpu()
	writeKV(buf, "usage_usec", usage)
	writeKV(buf, "user_usec", user)
	writeKV(buf, "system_usec", system)
	if s.c.root {
		return nil
	}
	writeKV(buf, "nr_periods", periods)
	writeKV(buf, "nr_throttled", throttled)
	writeKV(buf, "throttled_usec", throttledUsec)
	writeKV(buf, "nr_bursts", 0)
	writeKV(buf, "burst_usec", 0)
	return nil
}

// Show writes a line per block device: "259:0 rbytes=... wbytes=...
// rios=... wios=... dbytes=0 dios=0".
func (s ioStat) Show(_ context.Context, buf *bytes.Buffer) error {
	for i, dev := range s.c.h.devs {
		rbytes, wbytes, rios, wios := s.c.io(i)
		buf.WriteString(dev)
		writeSub(buf, "rbytes", rbytes)
		writeSub(buf, "wbytes", wbytes)
		writeSub(buf, "rios", rios)
		writeSub(buf, "wios", wios)
		writeSub(buf, "dbytes", 0)
		writeSub(buf, "dios", 0)
		buf.WriteByte('\n')
	}
	return nil
}

func (p cgroupProcs) Show(_ context.Context, buf *bytes.Buffer) error {
	for k := range p.c.procs {
		buf.Write(strconv.AppendUint(buf.AvailableBuffer(), p.c.pid(k), 10))
		buf.WriteByte('\n')
	}
	return nil
}
