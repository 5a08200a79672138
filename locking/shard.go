package locking

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
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
// that two running goroutines rarely pick the same shard.
func defaultShards() int {
	n := 4 * runtime.GOMAXPROCS(0)
	if n < 16 {
		n = 16
	}
	return 1 << bits.Len(uint(n-1))
}

// pickShard returns a shard index in [0, mask]. It uses the runtime's
// per-thread random source: no shared state is written, nothing allocates.
func pickShard(mask uint32) uint32 {
	return rand.Uint32() & mask
}
