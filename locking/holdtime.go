package locking

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/kernfsim/kernfsim/internal/pshard"
)

// Hold time is measured on a sample. Timing a hold reads the clock
// twice, which is dear beside an in-process operation that takes the read
// side one to a dozen times (BenchmarkWalkCounting, stats=exact;
// docs/notes/2026-12-02-lock-counters.md). So one acquisition in
// HoldSampleEvery is timed, and its hold counted HoldSampleEvery times.
// Acquisition and contention counts, and wait time (the contended path
// reads the clock anyway), stay exact.
//
// Which acquisitions are timed is decided from the count the acquisition
// adds to anyway (holdSampler.take), so deciding writes nothing. Where the
// start of a timed hold is kept:
//
//   - a write side, and mutex's read side, exclude every other holder:
//     the write side's start is a field of lockStats that the lock itself
//     protects (lockStats.writeStart); mutex's readers carry theirs in the
//     token as the shared readers do;
//   - a shared read side (rwsem, rcu, and the later ones) has many holders at once, so no one
//     field can hold their starts, and a per-P slot would be wrong when
//     the goroutine moves to another P between RLock and RUnlock: the
//     start travels in the ReadToken RLock returns (timedToken), and
//     RUnlock adds the hold to the shard of the P it runs on, which is
//     correct on any P (the shards are only ever summed).
//
// The hold is added when the lock is released, as lock_stat does, so a
// hold that spans a snapshot is counted whole in the later one.

const (
	// DefaultHoldSampleEvery is Options.HoldSampleEvery's default. At
	// 64, timing costs little beside the count (BenchmarkWalkCounting,
	// stats=on against stats=exact).
	DefaultHoldSampleEvery = 64
	// MaxHoldSampleEvery bounds Options.HoldSampleEvery.
	MaxHoldSampleEvery = 1 << 20
)

// epoch is the origin of clock; immutable after init.
var epoch = time.Now()

// clock is the monotonic time in nanoseconds since epoch, made odd so that
// a timed start is never 0, which marks an acquisition not timed. The low
// bit changes a hold by at most a nanosecond.
func clock() int64 { return int64(time.Since(epoch)) | 1 }

// holdSampler picks the acquisitions whose hold is timed: one in 1<<log.
// It is immutable.
type holdSampler struct {
	log uint8 // log2 of the sample rate
}

// fibonacci is 2^64 divided by the golden ratio: multiplying by it spreads
// consecutive counts over the top bits (Knuth's multiplicative hashing).
const fibonacci = 0x9e3779b97f4a7c15

// holdSamplerOf returns the sampler of Options.HoldSampleEvery every,
// which New has checked: 0 is the default, others round up to a power of
// two.
func holdSamplerOf(every int) holdSampler {
	if every <= 0 {
		every = DefaultHoldSampleEvery
	}
	return holdSampler{log: uint8(bits.Len(uint(min(every, MaxHoldSampleEvery) - 1)))}
}

// checkHoldSampleEvery rejects an Options.HoldSampleEvery out of range.
func checkHoldSampleEvery(every int) error {
	if every < 0 || every > MaxHoldSampleEvery {
		return fmt.Errorf("locking: HoldSampleEvery %d: want 0 (the default, %d) or 1 (exact) to %d",
			every, DefaultHoldSampleEvery, MaxHoldSampleEvery)
	}
	return nil
}

// take reports whether the acquisition that brought its counter to n is
// timed. The hash, not n modulo the rate, picks them: a caller that takes
// the lock k times per operation, k dividing the rate, would otherwise
// time the same one of its k every time; hashed, every residue of n
// modulo k gets its share. With rate 1 (log 0) the shift is 64 and every
// acquisition is timed.
func (h holdSampler) take(n int64) bool {
	return uint64(n)*fibonacci>>(64-h.log) == 0
}

// scale is the estimate of the holds one timed hold of ns stands for.
func (h holdSampler) scale(ns int64) int64 { return ns << h.log }

// every is the sample rate.
func (h holdSampler) every() int { return 1 << h.log }

// A ReadToken returned by a Strategy's RLock is the strategy's own token
// in its low tokenInnerBits bits (Grace's counter index, bravo's table
// slot plus one, or 0), and, if
// the hold is timed, the low 48 bits of its start (a clock reading) above
// them; not timed, they are 0.
const (
	tokenInnerBits = 16
	tokenInnerMask = 1<<tokenInnerBits - 1
)

// Grace's tokens fit below the start: 2*maxGraceShards counters.
const _ = uint(tokenInnerMask + 1 - 2*maxGraceShards)

// timedToken is inner, timed from start.
func timedToken(inner ReadToken, start int64) ReadToken {
	return inner | ReadToken(uint64(start)<<tokenInnerBits)
}

// timed reports whether t's hold is timed.
func (t ReadToken) timed() bool { return t > tokenInnerMask }

// inner is the strategy's own token in t.
func (t ReadToken) inner() ReadToken { return t & tokenInnerMask }

// heldUntil is how long the timed hold t had lasted at end (a clock
// reading): exact for holds under 2^48 ns (78 hours).
func (t ReadToken) heldUntil(end int64) int64 {
	return int64((uint64(end)<<tokenInnerBits - uint64(t&^tokenInnerMask)) >> tokenInnerBits)
}

// readShard is one P's read-side counters (pshard.Of), alone on its cache
// line: acquisitions made on the P (those that took a strategy's fast
// path apart), and the estimated hold time of timed read sides that ended
// on it.
type readShard struct {
	acq    atomic.Int64 // accessed atomically
	fast   atomic.Int64 // accessed atomically: acquisitions by the fast path (Stats.ReadFast), not in acq
	heldNs atomic.Int64 // accessed atomically: timed holds, scaled up
	_      [cacheLine - 24]byte
}

// numReadShards is how many per-P read-side shards a shared read side
// counts on; Ps beyond it share shards (pshard.Of).
const numReadShards = 64

// readShards are a shared read side's counters, one line per P.
type readShards [numReadShards]readShard

// newReadShards allocates a readShards on its own: at 4096 bytes it is
// allocated from the 4096-byte size class, so it starts on a cache-line
// boundary and no shard straddles two lines or shares one with the
// fields every reader reads (a readShards inside the lock's struct
// starts wherever the fields before it end).
func newReadShards() *readShards { return new(readShards) }

// Every shard fills one line exactly, and the array the size class.
const _ = uint(unsafe.Sizeof(readShard{}) - cacheLine)
const _ = uint(cacheLine - unsafe.Sizeof(readShard{}))
const _ = uint(unsafe.Sizeof(readShards{}) - 4096)

// enter counts an acquisition on the calling P's shard and returns inner,
// timed from now if the acquisition is sampled.
func (r *readShards) enter(h holdSampler, inner ReadToken) ReadToken {
	return r.enterOn(pshard.P(), h, inner)
}

// enterOn is enter for the P number p (pshard.P).
func (r *readShards) enterOn(p uint32, h holdSampler, inner ReadToken) ReadToken {
	if !h.take(r[pshard.Shard(p, numReadShards-1)].acq.Add(1)) {
		return inner
	}
	return timedToken(inner, clock())
}

// enterFast is enter for an acquisition by the strategy's fast path
// (Stats.ReadFast).
func (r *readShards) enterFast(h holdSampler, inner ReadToken) ReadToken {
	if !h.take(r[pshard.Of(numReadShards-1)].fast.Add(1)) {
		return inner
	}
	return timedToken(inner, clock())
}

// left adds the hold of the timed token t, ended at end, to the calling
// P's shard, which need not be the P that entered.
func (r *readShards) left(h holdSampler, t ReadToken, end int64) {
	r[pshard.Of(numReadShards-1)].heldNs.Add(h.scale(t.heldUntil(end)))
}

// addTo adds the shards' counts to s.
func (r *readShards) addTo(s *Stats) {
	for i := range r {
		fast := r[i].fast.Load()
		s.ReadAcquisitions += r[i].acq.Load() + fast
		s.ReadFast += fast
		s.ReadHeld += time.Duration(r[i].heldNs.Load())
	}
}
