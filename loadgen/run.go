package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/series"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// Run measures one configuration. It sets up the target and chooses the
// files. It runs the single phase (one worker, unpinned unless
// PinSingle), then the concur phase (Threads workers, pinned unless
// NoPin). Each phase lasts Times operations per worker and at least
// MinDuration. Run returns what they measured. A *ConfigError means bad
// input.
//
// When ctx is cancelled, Run stops the workers and cleans up: a server it
// started is stopped and its mountpoint removed. It returns what was
// measured with Interrupted set, and ctx's error. When a mount's server
// goes away midway (its root answers ENOTCONN), the workers stop within a
// progress tick. Run returns what was measured, and an error saying how
// to recover the mountpoint. While a phase's threads run, Run raises
// GOMAXPROCS to their number plus one (see threads), and restores it
// after.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	e, err := setup(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, e.close()) }()
	res = e.newResult()
	tally := errtally.ErrorTally{}
	e.warmUp()
	e.churn.start()
	for _, ph := range []struct {
		spec phaseSpec
		out  *Phase
	}{{e.singleSpec(), &res.Single}, {e.concurSpec(), &res.Concur}} {
		if *ph.out, err = e.phase(ctx, ph.spec, tally); err != nil || ctx.Err() != nil || e.gone() {
			break
		}
	}
	res.Churn = e.churn.finish()
	res.Errors = tally.Sorted()
	if err == nil && ctx.Err() != nil {
		res.Interrupted, err = true, ctx.Err()
	}
	if err == nil && e.server != nil && e.server.Exited() {
		err = fmt.Errorf("the kernfsim server exited during the run: %s", e.server.Output())
	}
	if err == nil && e.gone() {
		err = serverproc.NewServerGoneError(e.target.Dir, tally)
	}
	return res, err
}

// gone reports whether the target is a mount whose server has gone: a
// statfs of its root says the connection ended. It is not a stat. With
// an attribute timeout (fusefs.Options.AttrTimeout) the kernel answers a
// stat from its cache long after the server died. statfs always reaches
// the server.
func (e *env) gone() bool {
	return e.target.Kind != targets.TargetSim && workload.MountGone(e.t.abs(""))
}

// env is a run's set-up: the target, the plan and the helpers around them.
type env struct {
	cfg    Config
	target targets.Target
	t      target
	p      *plan
	cpus   []int
	churn  *writerSet         // the writers changing the tree; nil without any
	server *serverproc.Server // nil unless Run started one
	lock   lockProbe          // the target's lock counters; nil without any
	notes  []string
	// barrier is CLOCK_MONOTONIC (monoNow) when the running phase's start
	// barrier opened.
	barrier int64
}

func setup(ctx context.Context, cfg Config) (e *env, err error) {
	e = &env{cfg: cfg, target: cfg.Target, cpus: limits.AllowedCPUs()}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.t, err = e.openTarget(ctx); err != nil {
		return e, err
	}
	e.lock = lockProbeOf(e.t)
	if e.p, err = makePlan(e.t, cfg); err != nil {
		return e, err
	}
	return e, e.setupWriter()
}

// setupWriter makes the writers that change the tree during the run, if
// any: coldplug's prober, cgroup's churner (each by default, where the
// target can be written), or the device churner.
func (e *env) setupWriter() error {
	var note string
	var err error
	switch c := e.cfg; {
	case c.Op == workload.OpColdplug:
		e.churn, note, err = newProber(e.t, c, e.p.Blocks)
	case c.Op == workload.OpCgroup:
		e.churn, note, err = newCgroupChurn(e.t, c)
	case c.writeRate() > 0:
		var d *deviceChurn
		if d, err = newDeviceChurn(e.t, c.writers(), c.writersField()); err == nil {
			e.churn = newWriterSet(d, c.writers(), c.writeRate())
			if !c.NoChurnReads {
				e.p.Churn = d.files()
			}
		}
	}
	if note != "" {
		e.notes = append(e.notes, note)
	}
	return err
}

func (e *env) openTarget(ctx context.Context) (target, error) {
	switch e.target.Kind {
	case targets.TargetSim:
		return newSimTarget(e.target, e.cfg.explicitWriters() || e.cfg.Op == workload.OpCgroup, e.cfg.Threads)
	case targets.TargetKernfsim:
		if e.target.Dir == "" {
			if e.cfg.Server == nil {
				return nil, serverproc.ErrNoServer
			}
			sc := *e.cfg.Server
			sc.Lock, sc.Transport = e.target.Lock, e.target.ServerTransport
			s, err := serverproc.StartServer(ctx, sc)
			if err != nil {
				return nil, err
			}
			e.server, e.target.Dir, e.target.Mount = s, s.Mountpoint(), s.Mount()
		}
	}
	return newPathTarget(e.target.Dir)
}

func (e *env) close() error {
	var err error
	e.churn.finish()
	if err = e.p.close(); e.server != nil {
		err = errors.Join(err, e.server.Close())
	}
	return err
}

func (e *env) newResult() Result {
	return Result{Provenance: provenance.CaptureProvenance(e.cfg.Args), Target: e.target, Op: e.cfg.Op, Missing: e.cfg.Missing, Threads: e.cfg.Threads,
		Times: e.cfg.Times, CPUs: len(e.cpus), Pinned: !e.cfg.NoPin, SinglePinned: e.cfg.PinSingle,
		MinDuration: e.cfg.MinDuration, Procs: e.cfg.Procs,
		BufSize: e.cfg.BufSize, Files: e.p.Names, FilesPerOp: e.p.filesPerOp(), Cgroups: len(e.p.Cgroups), ClockCostNs: clockCost(), Notes: e.notes,
		SimCalibration: e.cfg.SimCalibration, FieldNames: e.cfg.FieldNames}
}

// phaseSpec is what one phase runs: n workers, each doing at least times
// operations and going on until minDur after the start barrier, pinned
// to CPU i mod ncpus if pin.
type phaseSpec struct {
	name   string // "single" or "concur", for Progress
	n      int
	times  int
	minDur time.Duration
	pin    bool
}

// singleSpec is the single phase: one worker, unpinned unless
// Config.PinSingle, as the seed's.
func (e *env) singleSpec() phaseSpec {
	return phaseSpec{name: "single", n: 1, times: e.cfg.Times, minDur: e.cfg.MinDuration, pin: e.cfg.PinSingle}
}

// concurSpec is the concur phase: Threads workers, pinned unless
// Config.NoPin.
func (e *env) concurSpec() phaseSpec {
	return phaseSpec{name: "concur", n: e.cfg.Threads, times: e.cfg.Times, minDur: e.cfg.MinDuration, pin: !e.cfg.NoPin}
}

// until is the CLOCK_MONOTONIC before which a worker of the phase whose
// start barrier opened at barrier does not end (worker.until); 0 without
// a MinDuration.
func (ph phaseSpec) until(barrier int64) int64 {
	if ph.minDur <= 0 {
		return 0
	}
	return barrier + ph.minDur.Nanoseconds()
}

// cpuOf is the CPU worker i of a phase is pinned to, or -1 when the
// phase's workers are not pinned.
func (e *env) cpuOf(ph phaseSpec, i int) int {
	if !ph.pin {
		return -1
	}
	return e.cpus[i%len(e.cpus)]
}

// outcome is one worker's report to the collector.
type outcome struct {
	res  WorkerResult
	hist *hdrhistogram.Histogram
	errs errtally.ErrorTally
	err  error // the worker could not run
	// endMono is when the worker's loop ended (monoNow), for
	// WorkerResult.Done.
	endMono int64
}

// warmUp does, untimed, the first operation of each worker of the concur
// phase, so that every path the workers use has been looked up once (the
// real /sys's dentries are warm; a fresh TargetSim walker's are not).
// One hwloc discovery reads every file already.
func (e *env) warmUp() {
	for i := range e.p.warmWorkers(e.cfg.Threads) {
		newWorker(i, -1, 1, e.cfg.BufSize, e.t, e.p).do()
	}
}

// phase runs spec's workers at once and summarises them, adding their
// failures to tally. It collects garbage first, so that the set-up's
// garbage is not collected on a phase's time.
func (e *env) phase(ctx context.Context, spec phaseSpec, tally errtally.ErrorTally) (Phase, error) {
	runtime.GC()
	run := e.threads
	if e.cfg.Procs {
		run = e.procs
	}
	var outs []outcome
	var wall time.Duration
	var err error
	var writes *latency.Latency
	use := measureLock(e.lock, func() time.Duration {
		e.churn.openWindow() // inside the lock's readings: each writer's change in flight at the first is the only one not counted there
		outs, wall, err = run(ctx, spec)
		writes = e.churn.closeWindow()
		return wall
	})
	ph := Phase{Ran: len(outs) > 0, Wall: wall, Lock: use, Writes: writes}
	all := latency.NewHistogram()
	for _, o := range outs {
		if o.err != nil {
			err = errors.Join(err, o.err)
			continue
		}
		if o.endMono > 0 {
			o.res.Done = time.Duration(o.endMono - e.barrier)
		}
		ph.Workers = append(ph.Workers, o.res)
		all.Merge(o.hist)
		tally.Merge(o.errs)
	}
	ph.Latency = latency.Summarize(all)
	return ph, err
}

// threads runs the phase's n workers as goroutines locked to their
// threads. It raises GOMAXPROCS to n+1 while they run, so that every
// worker thread is scheduled by the kernel as the original's pthreads
// were, not queued for one of GOMAXPROCS Ps by Go's scheduler (which
// would hand a P from thread to thread whenever a worker blocks, and run
// each worker for 10 ms slices).
func (e *env) threads(ctx context.Context, ph phaseSpec) ([]outcome, time.Duration, error) {
	n := ph.n
	if old := runtime.GOMAXPROCS(0); old < n+1 {
		runtime.GOMAXPROCS(n + 1)
		defer runtime.GOMAXPROCS(old)
	}
	ws := make([]*worker, n)
	var ready sync.WaitGroup
	start, stop := make(chan struct{}), new(atomic.Bool)
	results := make(chan outcome, n)
	for i := range ws {
		ws[i] = newWorker(i, e.cpuOf(ph, i), ph.times, e.cfg.BufSize, e.t, e.p)
		ready.Add(1)
		go ws[i].runThread(&ready, start, stop, results)
	}
	ready.Wait()
	t0 := time.Now()
	e.barrier = monoNow()
	for _, w := range ws {
		w.until = ph.until(e.barrier) // read by the worker after <-start: closing start publishes it
	}
	close(start)
	report := func() {
		e.report(ph, t0, sumDone(ws))
		if e.gone() {
			stop.Store(true) // every further operation would fail with ENOTCONN
		}
	}
	outs := collect(ctx, results, n, func() { stop.Store(true) }, report)
	return outs, time.Since(t0), nil
}

func sumDone(ws []*worker) int64 {
	var s int64
	for _, w := range ws {
		s += w.done.n.Load()
	}
	return s
}

// runThread is a worker goroutine: lock and pin, wait for the start, loop,
// report.
func (w *worker) runThread(ready *sync.WaitGroup, start <-chan struct{}, stop *atomic.Bool, out chan<- outcome) {
	unlock, err := lockThread(w.cpu)
	ready.Done()
	<-start
	if err != nil {
		out <- outcome{err: fmt.Errorf("worker %d: pinning to CPU %d: %w", w.index, w.cpu, err)}
		return
	}
	w.loop(stop)
	unlock()
	out <- outcome{res: w.res, hist: w.hist, errs: w.errs, endMono: w.endMono}
}

// collect receives n outcomes in completion order, calling stop once if
// ctx ends first and tick every ProgressEvery.
func collect(ctx context.Context, results <-chan outcome, n int, stop, tick func()) []outcome {
	t := time.NewTicker(series.ProgressEvery)
	defer t.Stop()
	done := ctx.Done()
	outs := make([]outcome, 0, n)
	for len(outs) < n {
		select {
		case o := <-results:
			outs = append(outs, o)
		case <-done:
			stop()
			done = nil
		case <-t.C:
			tick()
		}
	}
	return outs
}

func (e *env) report(ph phaseSpec, t0 time.Time, done int64) {
	if e.cfg.Progress != nil {
		e.cfg.Progress(Progress{Phase: ph.name, Done: done, Total: int64(ph.n) * int64(ph.times),
			MinDuration: ph.minDur, Elapsed: time.Since(t0)})
	}
}
