package pshard

import (
	"runtime"
	"sync"
	"testing"
)

// testMasks are the masks the tests try: one shard, a few small powers of
// two, and the widest masks a uint32 holds.
var testMasks = [...]uint32{0, 1, 3, 7, 63, 1<<31 - 1, 1<<32 - 1}

// testPs is how many P numbers TestShard tries: at least twice
// GOMAXPROCS, so it covers [0, GOMAXPROCS), and enough to wrap every mask
// below 512.
func testPs() int { return max(1024, 2*runtime.GOMAXPROCS(0)) }

// TestShard checks the mapping from P number to shard, on its own so that
// no scheduling enters: the shard is p modulo mask+1, so never above mask,
// and distinct Ps below mask+1 get distinct shards (with mask+1 >=
// GOMAXPROCS every P has its own).
func TestShard(t *testing.T) {
	for _, mask := range testMasks {
		seen := make(map[uint32]int)
		for p := range testPs() {
			got := Shard(uint32(p), mask)
			if want := uint32(uint64(p) % (uint64(mask) + 1)); got != want {
				t.Errorf("shard(%d, %#x): got %d, want %d", p, mask, got, want)
			}
			if uint64(p) > uint64(mask) {
				continue
			}
			if q, dup := seen[got]; dup {
				t.Errorf("shard(%d, %#x) = shard(%d, %#x) = %d: want distinct shards below mask+1", p, mask, q, mask, got)
			}
			seen[got] = p
		}
	}
}

// TestOfIsItsPsShard checks that Of returns the shard of the P it runs
// on. Each goroutine pins itself to its P (procPin, as Of does: no
// preemption, so no move to another P) and calls Of under every mask;
// which Ps get sampled is the scheduler's affair and is not checked.
func TestOfIsItsPsShard(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for range 100 {
				checkOfPinned(t)
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
}

// checkOfPinned calls Of under every mask while pinned to one P, then,
// unpinned, compares each result with that P's shard. GOMAXPROCS is read
// while pinned: changing it stops the world, which waits for the pin.
func checkOfPinned(t *testing.T) {
	var got [len(testMasks)]uint32
	p := procPin()
	procs := runtime.GOMAXPROCS(0)
	for i, mask := range testMasks {
		got[i] = Of(mask)
	}
	procUnpin()
	if p < 0 || p >= procs {
		t.Errorf("P number %d: want in [0, GOMAXPROCS %d)", p, procs)
	}
	for i, mask := range testMasks {
		if want := Shard(uint32(p), mask); got[i] != want || got[i] > mask {
			t.Errorf("Of(%#x) on P %d: got %d, want %d", mask, p, got[i], want)
		}
	}
}

// TestOfAllocatesNothing checks the doc's promise that Of allocates
// nothing.
func TestOfAllocatesNothing(t *testing.T) {
	var sink uint32
	if n := testing.AllocsPerRun(100, func() { sink += Of(7) }); n != 0 {
		t.Errorf("Of: got %v allocations per call, want 0", n)
	}
	_ = sink
}
