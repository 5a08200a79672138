package parbench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRunCallsEveryIterationOnce checks that Run's workers between them
// run exactly b.N iterations, each worker set up once, on its own number.
func TestRunCallsEveryIterationOnce(t *testing.T) {
	for _, workers := range []int{1, 3, 48} {
		runs := 0
		testing.Benchmark(func(b *testing.B) {
			var (
				mu    sync.Mutex
				ids   = map[int]int{}
				total atomic.Int64
			)
			Run(b, workers, func(id int) func() {
				mu.Lock()
				ids[id]++
				mu.Unlock()
				return func() { total.Add(1) }
			})
			runs++
			if len(ids) != workers {
				t.Errorf("workers=%d: %d workers set up", workers, len(ids))
			}
			for id, calls := range ids {
				if calls != 1 || id < 1 || id > workers {
					t.Errorf("workers=%d: worker %d set up %d times, want once, numbered 1..%d", workers, id, calls, workers)
				}
			}
			if got := total.Load(); got != int64(b.N) {
				t.Errorf("workers=%d: %d iterations at b.N=%d", workers, got, b.N)
			}
		})
		if runs == 0 {
			t.Errorf("workers=%d: the benchmark never ran", workers)
		}
	}
}

// TestBufferIsPadded checks Buffer's length and capacity: an append must
// not run into the padding.
func TestBufferIsPadded(t *testing.T) {
	if buf := Buffer(32); len(buf) != 32 || cap(buf) != 32 {
		t.Errorf("Buffer(32): len %d cap %d, want 32 and 32", len(buf), cap(buf))
	}
}

// TestRunStopsWhenSetUpFails checks that a worker whose set-up fails the
// benchmark and exits its goroutine, as b.Fatal does, fails the benchmark
// without hanging Run or running an iteration.
func TestRunStopsWhenSetUpFails(t *testing.T) {
	var iterations atomic.Int64
	done := make(chan bool, 1)
	go func() {
		r := testing.Benchmark(func(b *testing.B) {
			Run(b, 4, func(id int) func() {
				if id == 2 { // b.Fatal's effect; vet forbids calling it off the test goroutine
					b.Error("set-up failed")
					runtime.Goexit()
				}
				return func() { iterations.Add(1) }
			})
		})
		done <- r.N == 0
	}()
	if failed := <-done; !failed {
		t.Errorf("a benchmark whose set-up failed reported results")
	}
	if n := iterations.Load(); n != 0 {
		t.Errorf("%d iterations ran after a set-up failed", n)
	}
}
