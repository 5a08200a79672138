// Package parbench runs a parallel benchmark's loop without a cache line its workers share.
//
// A benchmark run at -cpu 1,2 then shows the scaling of the code under
// test, not the loop's. testing.B.RunParallel's workers share its
// iteration counter and, often, the line of their testing.PB; on an op
// of a few hundred nanoseconds that hides part of a two-CPU speed-up
// (docs/notes/2026-12-01-walker-scaling.md). Run hands out iterations in
// chunks of a sixteenth of each worker's share (at least 1, at most
// maxChunk) from a counter alone on its line, and keeps each worker's
// count in a local variable.
package parbench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// cacheLine is the padding unit (adjacent-line prefetch on x86 pairs
// 64-byte lines).
const cacheLine = 128

// maxChunk caps a chunk so that workers still balance when one CPU is
// interrupted: 4096 ops of 100 ns each take under half a millisecond.
const maxChunk = 4096

// Run calls b.N iterations in all, spread over workers goroutines
// (GOMAXPROCS if workers <= 0), and times them. worker is called once per
// goroutine, on that goroutine, before the timer starts, with the
// goroutine's number from 1; it returns the iteration function, which
// should keep whatever it writes in state of its own (a buffer it
// allocated itself, padded to a cache line where it matters; see Buffer).
// worker may fail the benchmark (b.Error, then runtime.Goexit as b.Fatal
// does): no iteration then runs. Neither worker nor the iteration function
// may call b.Fatal itself, which vet forbids off the test goroutine.
func Run(b *testing.B, workers int, worker func(id int) func()) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunk := int64(b.N / (workers * 16))
	chunk = max(1, min(chunk, maxChunk))
	var (
		next  paddedCounter // iterations handed out
		ready sync.WaitGroup
		done  sync.WaitGroup
		start = make(chan struct{})
	)
	ready.Add(workers)
	done.Add(workers)
	for id := 1; id <= workers; id++ {
		go func() {
			defer done.Done()
			setUp := false
			defer func() {
				if !setUp { // worker exited its goroutine (runtime.Goexit)
					ready.Done()
				}
			}()
			iter := worker(id)
			setUp = true
			ready.Done()
			<-start
			for {
				from := next.n.Add(chunk) - chunk
				if from >= int64(b.N) {
					return
				}
				for range min(chunk, int64(b.N)-from) {
					iter()
				}
			}
		}()
	}
	ready.Wait()
	if b.Failed() {
		next.n.Store(int64(b.N)) // every worker returns at once
		close(start)
		done.Wait()
		return
	}
	b.ResetTimer()
	b.StartTimer()
	close(start)
	done.Wait()
	b.StopTimer()
}

// Buffer returns a byte slice of length n with a cache line of padding on
// either side, so that no other allocation shares a line with it: a
// worker's own buffer to write into.
func Buffer(n int) []byte {
	return make([]byte, n+2*cacheLine)[cacheLine : cacheLine+n : cacheLine+n]
}

type paddedCounter struct {
	_ [cacheLine]byte
	n atomic.Int64
	_ [cacheLine - 8]byte
}
