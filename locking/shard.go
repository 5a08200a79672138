package locking

import (
	"math/bits"
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
// that every P's shard (pshard.Of) is its own.
func defaultShards() int {
	n := 4 * runtime.GOMAXPROCS(0)
	if n < 16 {
		n = 16
	}
	return 1 << bits.Len(uint(n-1))
}
