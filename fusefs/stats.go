package fusefs

import (
	"math/rand/v2"
	"sync/atomic"
)

// Opcodes counted in Stats, in the order they are printed.
var Opcodes = []string{
	"LOOKUP", "FORGET", "GETATTR", "SETATTR", "ACCESS", "READLINK", "OPEN", "READ",
	"WRITE", "RELEASE", "FLUSH", "OPENDIR", "READDIR", "RELEASEDIR", "STATFS",
}

const (
	opLookup = iota
	opForget
	opGetattr
	opSetattr
	opAccess
	opReadlink
	opOpen
	opRead
	opWrite
	opRelease
	opFlush
	opOpendir
	opReaddir
	opReleasedir
	opStatfs
	numOps
)

const statShards = 16

// statShard is one CPU-spread copy of the per-opcode counters, padded so
// that two shards never share a cache line.
type statShard struct {
	n [numOps]atomic.Uint64
	_ [128 - (numOps*8)%128]byte
}

// Stats counts requests by opcode. A request adds to one randomly chosen
// shard, so concurrent requests rarely write the same cache line.
type Stats struct {
	shards [statShards]statShard
}

func newStats() *Stats { return &Stats{} }

func (s *Stats) count(op int) {
	s.shards[rand.Uint32()%statShards].n[op].Add(1)
}

// Requests returns the number of requests per opcode, indexed as Opcodes.
func (s *Stats) Requests() []uint64 {
	out := make([]uint64, numOps)
	for i := range s.shards {
		for op := range out {
			out[op] += s.shards[i].n[op].Load()
		}
	}
	return out
}

// Stats returns the server's request counters.
func (s *Server) Stats() *Stats { return s.stats }
