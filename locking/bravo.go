package locking

import (
	"runtime"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/internal/pshard"
)

// BRAVO is Dice and Kogan's reader bias ("BRAVO — Biased Locking for
// Reader-Writer Locks", USENIX ATC 2019) over an rwsem (RWSem, so Go's
// sync.RWMutex), a design Linux has never put in front of kernfs. While
// the lock is biased (RBias), a reader publishes itself in a visible
// readers table that every BRAVO lock shares: it swaps its slot, picked
// by a hash of the lock and the reader, from nil to the lock, checks
// RBias again, and is in, having written no line that readers on other
// CPUs write. A reader that finds the slot taken (a collision) or the
// bias gone takes the rwsem's read side; there, if the bias is off and
// the inhibit window has passed, it sets the bias again. A writer takes
// the rwsem's write side, and if the lock is biased revokes the bias:
// clears RBias, waits until no slot of the table names the lock, and
// inhibits the bias for N times what the revocation took (N = 9, the
// paper's), so that writes that come often are not each charged a scan.
//
// The reader's identity is its P (pshard.Of): two readers on one P
// collide and the second takes the slow path. A reader may leave on
// another P; its slot travels in its ReadToken (the slot plus one in the
// token's low bits, 0 for the slow path), so RUnlock clears the slot it
// took.
//
// Counting: the fast path's acquisitions on the P's own line
// (Stats.ReadFast), the slow path's as rwsem counts them; the revocation
// runs with the write side held and counts in its hold.
//
// The table has 4096 slots of 8 bytes (32 KiB), as dense as the paper's
// (its size there taken as 4096 too, unchecked); a slot shares its
// line with 15 others, so two readers hashed near each other share a line
// as they do in the paper. The lock starts unbiased; its first reader
// sets the bias.
//
// Reader cost: biased, a compare-and-swap on the table slot (a line only
// readers hashed to its slots write) and two loads of a line that writers
// and the readers restoring the bias write, and a store to the slot to
// leave; unbiased, rwsem's, and a clock read while the bias is off.
// Writer cost: rwsem's; while biased, a scan of the whole table waiting
// for the lock's fast readers to leave, then 9 times that without bias.
// Allocation: none. Staleness: none.
type BRAVO struct {
	// Read by every reader; written by revoking writers and restoring
	// readers only.
	rbias atomic.Bool  // accessed atomically: readers may use the table
	id    uint64       // immutable: the lock's part of the slot hash
	count bool         // immutable: counters on
	hold  holdSampler  // immutable
	reads *readShards  // immutable pointer: under's, shared with the slow path
	now   func() int64 // immutable once in use: the clock of the inhibit window (clock; tests set their own)
	_     [cacheLine - 40]byte

	// inhibitUntil is when readers may set the bias again (a clock
	// reading). Protected by under: written with its write side held,
	// read with its read side held.
	inhibitUntil int64
	under        *RWSem // immutable pointer
}

const (
	// bravoTableBits is the log2 of the visible readers table's slots.
	bravoTableBits = 12
	// bravoInhibit is N: the bias stays off for N times a revocation.
	bravoInhibit = 9
)

// bravoTable is the visible readers table every BRAVO lock shares: a
// slot holds the lock a fast reader is in, or nil.
var bravoTable [1 << bravoTableBits]atomic.Pointer[BRAVO] // elements accessed atomically

// bravoIDs numbers BRAVO locks, for their part of the slot hash.
var bravoIDs atomic.Uint64 // accessed atomically

// A slot plus one fits in a token's inner bits.
const _ = uint(tokenInnerMask - 1<<bravoTableBits)

func newBRAVO(o Options) *BRAVO {
	u := newRWSem(o)
	return &BRAVO{id: bravoIDs.Add(1), count: !o.NoStats, hold: u.hold, reads: u.reads, now: clock, under: u}
}

func (b *BRAVO) Name() string   { return "bravo" }
func (b *BRAVO) Seal()          {}
func (b *BRAVO) Grace() *Grace  { return nil }
func (b *BRAVO) Traits() Traits { return mustTraits("bravo") }
func (b *BRAVO) Stats() Stats   { return b.under.Stats() }

// slot is the table slot of this lock's readers on the calling P.
func (b *BRAVO) slot() uint64 {
	p := uint64(pshard.Of(^uint32(0)))
	return (b.id<<16 ^ p) * fibonacci >> (64 - bravoTableBits)
}

// RLock enters the read side: by the table while biased, else by the
// rwsem, restoring the bias once the inhibit window has passed.
func (b *BRAVO) RLock() ReadToken {
	if b.rbias.Load() {
		if t, ok := b.tryFast(); ok {
			return t
		}
	}
	t := b.under.RLock()
	if !b.rbias.Load() && b.now() >= b.inhibitUntil {
		b.rbias.Store(true)
	}
	return t
}

// tryFast publishes the reader in its slot and checks the bias again.
func (b *BRAVO) tryFast() (ReadToken, bool) {
	i := b.slot()
	s := &bravoTable[i]
	if !s.CompareAndSwap(nil, b) {
		return 0, false
	}
	if !b.rbias.Load() { // a writer revoked the bias meanwhile
		s.Store(nil)
		return 0, false
	}
	inner := ReadToken(i + 1)
	if !b.count {
		return inner, true
	}
	return b.reads.enterFast(b.hold, inner), true
}

// RUnlock leaves the read side entered with t: clears its slot, or
// leaves the rwsem.
func (b *BRAVO) RUnlock(t ReadToken) {
	i := t.inner()
	switch {
	case i == 0:
		b.under.RUnlock(t)
	case t.timed():
		end := clock()
		bravoTable[i-1].Store(nil)
		b.reads.left(b.hold, t, end)
	default:
		bravoTable[i-1].Store(nil)
	}
}

// Lock takes the rwsem's write side and revokes the bias if it is set.
func (b *BRAVO) Lock() error {
	if err := b.under.Lock(); err != nil {
		return err
	}
	if b.rbias.Load() {
		b.revokeLocked()
	}
	return nil
}

// Unlock leaves the rwsem's write side.
func (b *BRAVO) Unlock() { b.under.Unlock() }

// revokeLocked clears the bias, waits until no slot names the lock, and
// inhibits the bias for bravoInhibit times the wait.
// Preconditions: the write side held.
func (b *BRAVO) revokeLocked() {
	b.rbias.Store(false)
	start := b.now()
	for i := range bravoTable {
		for bravoTable[i].Load() == b {
			runtime.Gosched()
		}
	}
	end := b.now()
	b.inhibitUntil = end + (end-start)*bravoInhibit
}
