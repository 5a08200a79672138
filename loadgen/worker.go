package loadgen

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

func itoa(i int) string { return strconv.Itoa(i) }

// churnEvery is how often a worker reads a churned device's file instead
// of its own operation when churn is on: every fourth iteration.
const churnEvery = 4

// worker is one timed loop. Everything in it is the worker's own while it
// runs; the collector reads it after the worker has reported.
type worker struct {
	index int
	cpu   int // -1: not pinned
	times int
	// until is CLOCK_MONOTONIC (monoNow) before which the loop does not
	// end, even with its times done; 0: times alone decide
	// (Config.MinDuration). Set before the worker starts.
	until int64
	t     target
	p     *plan
	buf   []byte // BufSize bytes: the read buffer
	dbuf  []byte // getdents buffer
	rng   *rand.Rand
	hist  *hdrhistogram.Histogram
	errs  errtally.ErrorTally
	res   WorkerResult
	// endMono is CLOCK_MONOTONIC when the loop ended, in ns: the
	// collector turns it into WorkerResult.Done.
	endMono int64
	cursor  int           // OpColdplug, OpCgroup: the next block's or cgroup's index
	done    paddedCounter // operations finished, accessed atomically
}

// paddedCounter is an atomic counter alone on its cache line, so that
// workers bumping their own counters do not share a line.
type paddedCounter struct {
	_ [64]byte
	n atomic.Int64
	_ [56]byte
}

func newWorker(index, cpu, times, bufSize int, t target, p *plan) *worker {
	if p.Op == workload.OpCgroup {
		bufSize = max(bufSize, CgroupPage) // each file whole
	}
	w := &worker{index: index, cpu: cpu, times: times, t: t, p: p,
		buf: make([]byte, bufSize), rng: rand.New(rand.NewPCG(uint64(index), 0x6b65726e6673)),
		hist: latency.NewHistogram(), errs: errtally.ErrorTally{}}
	if p.Op == workload.OpReaddir || p.Op == workload.OpHwloc {
		w.dbuf = make([]byte, 8192)
	}
	if len(p.Blocks) > 0 {
		w.cursor = index % len(p.Blocks)
	}
	if len(p.Cgroups) > 0 {
		w.cursor = index % len(p.Cgroups)
	}
	w.res = WorkerResult{Worker: index, CPU: cpu}
	return w
}

// loop runs the worker's operations until times are done and the clock
// has passed until, or until stop is set. It reads the monotonic clock
// once per operation: the end of one is the start of the next.
func (w *worker) loop(stop *atomic.Bool) {
	var need time.Duration // how long after base the loop may end
	if w.until != 0 {
		need = time.Duration(w.until - monoNow()) // read before base: the loop ends at until or later
	}
	base := time.Now()
	var prev time.Duration
	j := 0
	for ; (j < w.times || prev < need) && !stop.Load(); j++ {
		var err error
		cp, churned := w.churnPath(j)
		if churned {
			err = w.t.readFile(cp, w.buf)
		} else {
			err = w.do()
		}
		now := time.Since(base)
		if w.hist.RecordValue(int64(now-prev)) != nil {
			w.hist.RecordValue(latency.HistMax)
		}
		if err != nil {
			w.fail(err, cp)
		}
		prev = now
		w.done.n.Store(int64(j + 1))
	}
	w.res.Ops, w.res.Total, w.endMono = int64(j), prev, monoNow()
}

// monoNow is CLOCK_MONOTONIC in nanoseconds: one clock for every process,
// so that a worker process's end and its parent's start barrier compare.
func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// churnPath is the churned device's file iteration j reads instead of
// the run's operation: every churnEvery-th iteration when churn is on.
func (w *worker) churnPath(j int) (string, bool) {
	if len(w.p.Churn) == 0 || j%churnEvery != churnEvery-1 {
		return "", false
	}
	return w.p.Churn[(w.index+j/churnEvery)%len(w.p.Churn)], true
}

// do is one operation. A missing-path operation that fails with ENOENT
// succeeded.
func (w *worker) do() error {
	p := w.p
	switch {
	case p.Missing != "":
		return w.missing()
	case p.Op == workload.OpStat:
		return w.t.stat(p.Files[w.index%len(p.Files)])
	case p.Op == workload.OpReaddir:
		return w.t.readDir(p.Dirs[w.index%len(p.Dirs)], w.dbuf)
	case p.Op == workload.OpSameFile:
		return w.t.readFile(p.Files[0], w.buf)
	case p.Op == workload.OpRandom:
		return w.t.readFile(p.Set[w.rng.IntN(len(p.Set))], w.buf)
	case p.Op == workload.OpHwloc:
		return w.discover()
	case p.Op == workload.OpLstopo:
		return w.lstopo()
	case p.Op == workload.OpColdplug:
		return w.coldplug()
	case p.Op == workload.OpCgroup:
		return w.cgroupRead()
	}
	return w.t.readFile(p.Files[w.index%len(p.Files)], w.buf)
}

// errFound is what a missing-path operation that succeeded records.
var errFound = syscall.Errno(0)

func (w *worker) missing() error {
	var err error
	if w.p.Op == workload.OpStat {
		err = w.t.stat(w.p.Missing)
	} else {
		err = w.t.readFile(w.p.Missing, w.buf)
	}
	switch {
	case err == nil:
		return errFound
	case kernfsim.Errno(err) == syscall.ENOENT:
		return nil
	}
	return err
}

// fail records a failed operation; churnPath is the churned file it
// read, or "".
func (w *worker) fail(err error, churnPath string) {
	path := churnPath
	var pe *fs.PathError
	switch p := w.p; {
	case churnPath != "":
	case (p.Op == workload.OpHwloc || p.Op == workload.OpLstopo || p.Op == workload.OpColdplug || p.Op == workload.OpCgroup) && errors.As(err, &pe):
		path = pe.Path // the op's own error names the file
	case p.Missing != "":
		path = p.Missing
	case len(p.Files) > 0:
		path = p.Files[w.index%len(p.Files)]
	case len(p.Dirs) > 0:
		path = p.Dirs[w.index%len(p.Dirs)]
	}
	w.errs.Add(kernfsim.Errno(err), churnPath != "", path, 1)
}

// lockThread locks the calling goroutine to its OS thread and, if cpu is
// not negative, pins the thread to cpu. unlock undoes both; if the old
// CPU mask cannot be restored, the thread stays locked and exits with its
// goroutine rather than carry the pin to other goroutines.
func lockThread(cpu int) (unlock func(), err error) {
	runtime.LockOSThread()
	if cpu < 0 {
		return runtime.UnlockOSThread, nil
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() {
		if unix.SchedSetaffinity(0, &old) == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}

// clockCost measures one read of the monotonic clock, in nanoseconds.
func clockCost() float64 {
	const n = 20000
	base := time.Now()
	var last time.Duration
	for range n {
		last = time.Since(base)
	}
	return float64(last) / n
}
