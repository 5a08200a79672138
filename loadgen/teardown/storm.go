package teardown

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/series"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// stormer creates and removes one run's devices.
type stormer struct {
	t     target
	cfg   Config
	sp    spec
	names []string
	next  atomic.Int64 // devices handed to remove so far: readers pick from the rest
	done  atomic.Int64 // devices created or removed in the phase running (progress)
}

func newStormer(t target, cfg Config, sp spec) *stormer {
	names := make([]string, cfg.Count)
	for i := range names {
		names[i] = deviceName(i)
	}
	return &stormer{t: t, cfg: cfg, sp: sp, names: names}
}

// progress calls Config.Progress every ProgressEvery until stop is
// called.
func (s *stormer) progress(phase string) (stop func()) {
	if s.cfg.Progress == nil {
		return func() {}
	}
	s.done.Store(0)
	t0, quit, over := time.Now(), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		tick := time.NewTicker(series.ProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				s.cfg.Progress(Progress{Lock: s.sp.lock, GP: s.sp.gp, Phase: phase,
					Done: int(s.done.Load()), Total: len(s.names), Elapsed: time.Since(t0)})
			}
		}
	}()
	return func() { close(quit); <-over }
}

// create makes every device, one call each, and returns how long it took.
func (s *stormer) create(ctx context.Context) (time.Duration, error) {
	defer s.progress("create")()
	t0 := time.Now()
	for i, n := range s.names {
		if ctx.Err() != nil {
			return time.Since(t0), ctx.Err()
		}
		if err := s.t.create(n, s.cfg.Attrs); err != nil {
			return time.Since(t0), err
		}
		s.done.Store(int64(i + 1))
	}
	return time.Since(t0), nil
}

// storm removes the devices, Batch per call, while the readers read. It
// fills in run's Removed, Calls, Total, Caller and Reader, and returns
// when the storm began. One clock read per call: the end of one call is
// the start of the next.
func (s *stormer) storm(ctx context.Context, run *Storm) (time.Time, error) {
	defer s.progress("remove")()
	readers := s.startReaders()
	h := latency.NewHistogram()
	t0 := time.Now()
	var prev time.Duration
	var err error
	for i := 0; i < len(s.names) && ctx.Err() == nil; i += s.cfg.Batch {
		batch := s.names[i:min(i+s.cfg.Batch, len(s.names))]
		s.next.Store(int64(i + len(batch)))
		if err = s.t.remove(batch); err != nil {
			break
		}
		now := time.Since(t0)
		latency.RecordLatency(h, now-prev)
		prev = now
		run.Calls++
		run.Removed += len(batch)
		s.done.Store(int64(run.Removed))
	}
	run.Total, run.Caller = prev, latency.Summarize(h)
	run.Reader = readers.stop()
	return t0, err
}

// readers are the goroutines reading remaining devices during a storm,
// each locked to its thread; GOMAXPROCS is raised to their number plus
// two while they run (the remover and the tree's own goroutines), so that
// the kernel schedules them as threads.
type readers struct {
	stopFlag atomic.Bool
	wg       sync.WaitGroup
	rs       []*reader // each owned by its goroutine until wg is done
	restore  func()
}

type reader struct {
	hist *hdrhistogram.Histogram
	errs errtally.ErrorTally
}

func (s *stormer) startReaders() *readers {
	n := s.cfg.Readers
	rd := &readers{restore: func() {}}
	if n == 0 {
		return rd
	}
	if old := runtime.GOMAXPROCS(0); old < n+2 {
		runtime.GOMAXPROCS(n + 2)
		rd.restore = func() { runtime.GOMAXPROCS(old) }
	}
	var ready sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		r := &reader{hist: latency.NewHistogram(), errs: errtally.ErrorTally{}}
		rd.rs = append(rd.rs, r)
		ready.Add(1)
		rd.wg.Add(1)
		go func() {
			defer rd.wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-start
			s.read(r, i, &rd.stopFlag)
		}()
	}
	ready.Wait()
	close(start)
	return rd
}

// read reads uevent of a device drawn from those not yet handed to the
// remover, until stop is set or none is left.
func (s *stormer) read(r *reader, seed int, stop *atomic.Bool) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x74656172646f776e))
	buf := make([]byte, workload.DefaultBufSize)
	for !stop.Load() {
		lo := int(s.next.Load())
		if lo >= len(s.names) {
			return
		}
		name := s.names[lo+rng.IntN(len(s.names)-lo)]
		t0 := time.Now()
		err := s.t.read(name, buf)
		latency.RecordLatency(r.hist, time.Since(t0))
		if err != nil {
			r.errs.Add(kernfsim.Errno(err), true, client.DevicesDir+"/"+name+"/"+readAttr, 1)
		}
	}
}

// stop stops the readers and merges what they saw; nil without readers.
func (rd *readers) stop() *ReaderResult {
	if len(rd.rs) == 0 {
		return nil
	}
	rd.stopFlag.Store(true)
	rd.wg.Wait()
	rd.restore()
	all, tally := latency.NewHistogram(), errtally.ErrorTally{}
	for _, r := range rd.rs {
		all.Merge(r.hist)
		tally.Merge(r.errs)
	}
	return &ReaderResult{Readers: len(rd.rs), Latency: latency.Summarize(all), Errors: tally.Sorted()}
}
