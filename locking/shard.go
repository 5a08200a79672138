package locking

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	_ "unsafe" // go:linkname runtime.procPin
)

// cacheLine is the padding unit that keeps two shards off one cache line
// (128 bytes covers adjacent-line prefetch on x86 and the 128-byte lines of
// some arm64 parts).
const cacheLine = 128

// paddedCounter is one shard of a sharded counter, alone on its cache line.
type paddedCounter struct {
	n atomic.Int64
	_ [cacheLine - 8]byte
}

// defaultShards is a power of two, at least 4 per CPU and at least 16, so
// that every P's shard (pickShard) is its own.
func defaultShards() int {
	n := 4 * runtime.GOMAXPROCS(0)
	if n < 16 {
		n = 16
	}
	return 1 << bits.Len(uint(n-1))
}

// pickShard returns the calling P's shard in [0, mask]: the P's number, as
// the kernel's per-CPU counters use the CPU's (this_cpu_inc). It writes no
// shared state and allocates nothing. The goroutine may move to another P
// right after; the caller's atomic add on the shard is then shared with
// that P's readers for one section, which costs a line transfer, never
// correctness (a section leaves on the shard it entered). Where
// GOMAXPROCS exceeds mask+1, Ps share shards modulo mask+1.
//
// Two ways of choosing were measured and dropped
// (BenchmarkGraceRead/mode=parallel, -cpu 1,2): a random shard per call
// made two CPUs write the same line on about half their sections
// (shard=random: -cpu 2 no faster per op than -cpu 1); a home shard kept
// per P in a sync.Pool cost a Get and a Put per section (about 18 ns of a
// 30 ns section) and could hand two Ps one shard after a garbage collection
// emptied the pool.
func pickShard(mask uint32) uint32 {
	p := procPin()
	procUnpin()
	return uint32(p) & mask
}

// procPin disables preemption and returns the current P's number; procUnpin
// undoes it. They are the runtime's own, also used by sync.Pool; the
// runtime keeps them reachable by go:linkname on purpose (runtime/proc.go).
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()
