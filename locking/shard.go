package locking

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
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
// that every P's home shard (pickShard) is its own.
func defaultShards() int {
	n := 4 * runtime.GOMAXPROCS(0)
	if n < 16 {
		n = 16
	}
	return 1 << bits.Len(uint(n-1))
}

// shardHome is a shard number one P keeps using, as the kernel's per-CPU
// counters have one CPU each. A home is only read once made.
type shardHome struct{ n uint32 }

// maxHomes is how many distinct homes there are; Ps beyond it share.
const maxHomes = 1 << 10

// homeTable holds every home, so that handing out a new one allocates
// nothing (the race detector makes sync.Pool drop objects at random).
var homeTable = func() (t [maxHomes]shardHome) {
	for i := range t {
		t[i].n = uint32(i)
	}
	return t
}()

// homes hands each P back the shardHome it last put (sync.Pool keeps one
// object per P in a slot only that P touches), so the P's readers stay on
// one shard. New homes are handed out in turn, so the Ps that ask at the
// same time (at start, and after a garbage collection empties the pool)
// get different shards.
var (
	homes   = sync.Pool{New: func() any { return &homeTable[homeSeq.Add(1)%maxHomes] }}
	homeSeq atomic.Uint32 // written only when a P needs a new home
)

// pickShard returns the calling P's home shard in [0, mask]. It writes no
// shared state (the pool slot is the P's own) and allocates nothing. A P
// keeps its home across a garbage collection if it used it since the one
// before (the pool's victim cache); one that gets a new home may land on
// another P's shard modulo mask+1, which costs sharing until one of them
// is rehomed.
//
// A random shard per call, as ReadLock once chose, made two CPUs write the
// same line on about half their read sections: each of the shards was last
// written by either CPU with equal odds
// (BenchmarkGraceRead/mode=parallel/shard=random).
func pickShard(mask uint32) uint32 {
	h := homes.Get().(*shardHome)
	n := h.n
	homes.Put(h)
	return n & mask
}
