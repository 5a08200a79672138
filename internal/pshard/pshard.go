// Package pshard picks the shard of a sharded counter that the calling goroutine's P owns.
//
// The kernel's per-CPU counters use the CPU's own (this_cpu_inc), so two
// CPUs counting at once write different cache lines. It is the one place that reaches into the runtime for the P's
// number; the grace-period readers and rwsem's counters in locking, and
// the FUSE server's request counters and handle free lists, all use it.
//
// A random shard per call would make two CPUs write the same line on
// about half their adds, since each shard is last written by either CPU
// with equal odds (locking's BenchmarkGraceRead/mode=parallel/shard=random).
package pshard

import _ "unsafe" // go:linkname runtime.procPin

// Of returns the calling P's shard in [0, mask] (mask+1 a power of two):
// the P's number. It writes no shared state and allocates nothing. The
// goroutine may move to another P right after; the caller's atomic add on
// the shard is then shared with that P's for one add, which costs a line
// transfer, never correctness. Where GOMAXPROCS exceeds mask+1, Ps share
// shards modulo mask+1.
func Of(mask uint32) uint32 {
	return Shard(P(), mask)
}

// P returns the calling goroutine's P number, for a caller that picks
// shards of several counters with different masks (Shard) on one call:
// locking's read side counts a section in the grace-period counter and in
// the lock counters, and asking once saves a procPin and procUnpin.
func P() uint32 {
	p := procPin()
	procUnpin()
	return uint32(p)
}

// Shard is the shard of P number p (as P returns it) in [0, mask]: p
// modulo mask+1. Distinct Ps below mask+1 get distinct shards.
func Shard(p, mask uint32) uint32 { return p & mask }

// procPin disables preemption and returns the current P's number; procUnpin
// undoes it. They are the runtime's own, also used by sync.Pool; the
// runtime keeps them reachable by go:linkname on purpose (runtime/proc.go).
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()
