package pshard

import (
	"runtime"
	"sync"
	"testing"
)

// TestOfStaysInRangeAndSpreads checks that Of stays within its mask, and
// that goroutines on every P between them reach more than one shard when
// there is more than one P (each P has its own number).
func TestOfStaysInRangeAndSpreads(t *testing.T) {
	const mask = 7
	seen := make([]bool, mask+1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for range 1000 {
				s := Of(mask)
				if s > mask {
					t.Errorf("Of(%d) = %d", mask, s)
					return
				}
				mu.Lock()
				seen[s] = true
				mu.Unlock()
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	n := 0
	for _, s := range seen {
		if s {
			n++
		}
	}
	if n == 0 || (runtime.GOMAXPROCS(0) > 1 && n < 2) {
		t.Errorf("%d shards reached with GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
}
