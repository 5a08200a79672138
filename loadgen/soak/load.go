package soak

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// sampler takes a mode's periodic samples while its load runs.
type sampler struct {
	c       Config
	p       *server
	l       *load
	lock    string
	t0      time.Time
	warmEnd time.Duration
	last    time.Time // the previous sample
}

// segment runs the load for d, sampling every interval, then stops it
// and returns the server's settled level.
func (s *sampler) segment(ctx context.Context, d time.Duration) (ServerLevel, error) {
	s.l.start()
	s.last = time.Now()
	end := time.After(d)
	tick, alive := time.NewTicker(s.c.Interval), time.NewTicker(250*time.Millisecond)
	defer tick.Stop()
	defer alive.Stop()
	var err error
	for err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-end:
			s.l.stop()
			if time.Since(s.last) > s.c.Interval/10 {
				err = s.sample() // the segment's tail
			}
			if err == nil {
				return s.p.settle(ctx)
			}
			return ServerLevel{}, s.p.gone(err, s.l.total)
		case <-tick.C:
			err = s.sample()
		case <-alive.C: // notices a dead server within 250 ms
			_, err = s.p.process()
		}
	}
	s.l.stop()
	return ServerLevel{}, s.p.gone(err, s.l.total)
}

func (s *sampler) sample() error {
	lv, err := s.p.level()
	if err != nil {
		return err
	}
	now := time.Now()
	ops, h, errs := s.l.drain()
	secs := now.Sub(s.last).Seconds()
	s.last = now
	smp := Sample{Lock: s.lock, Elapsed: now.Sub(s.t0), Warmup: now.Sub(s.t0) < s.warmEnd, Ops: ops,
		P99: time.Duration(h.ValueAtQuantile(99)), Errors: errs.Sorted(), Server: lv,
		Changes: s.l.changes.Load(), Storms: s.l.storms.Load()}
	if secs > 0 {
		smp.OpsPerSec = float64(ops) / secs
	}
	if s.c.OnSample != nil {
		s.c.OnSample(smp)
	}
	return nil
}

// actor is one reader or writer goroutine's tallies, drained by the
// sampler.
type actor struct {
	mu   sync.Mutex              // protects hist, ops and errs
	hist *hdrhistogram.Histogram // this interval's latencies; protected by mu
	ops  int64                   // operations in this interval; protected by mu
	errs errtally.ErrorTally     // this interval's failures; protected by mu
}

func newActor() *actor {
	return &actor{hist: latency.NewHistogram(), errs: errtally.ErrorTally{}}
}

// record adds one operation that took d and failed with err (or not);
// expected marks a failure churn explains when it is ENOENT or ENODEV.
func (a *actor) record(d time.Duration, err error, expected bool, path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d > 0 {
		a.ops++
		latency.RecordLatency(a.hist, d)
	}
	if err != nil {
		a.errs.Add(kernfsim.Errno(err), expected, path, 1)
	}
}

// drain returns and resets the actor's interval tallies.
func (a *actor) drain(h *hdrhistogram.Histogram, errs errtally.ErrorTally) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	h.Merge(a.hist)
	a.hist.Reset()
	errs.Merge(a.errs)
	clear(a.errs)
	n := a.ops
	a.ops = 0
	return n
}

// load is a mode's load: readers on every operation, a reader of the
// churned devices, the churner and the storms. It runs in segments
// (start, stop) so that the server can settle and be measured between
// them.
type load struct {
	t       *workload.Dir
	c       Config
	readers []*reader
	writers []*actor // the churner's and the storms' failures
	present []bool   // churn slots; owned by the churner while it runs
	changes atomic.Int64
	storms  atomic.Int64
	torn    atomic.Int64
	stopCh  chan struct{} // closed to end a segment
	wg      sync.WaitGroup
	// total and totalOps are every failure and operation so far: owned by
	// the sampler's goroutine, which folds the actors' tallies in.
	total    errtally.ErrorTally
	totalOps int64
}

// reader is a reader goroutine's state: an operation's worker, or
// (devices set) the reader of the churned and stormed devices.
type reader struct {
	*actor
	w       workload.Worker
	path    string
	devices []string
}

const (
	deviceFile = "uevent" // what the device reader reads of each device
	listEvery  = 4        // the device reader lists devices/kernfsim every listEvery reads
	churnSlots = 8
	churnName  = "soakchurn"
	stormName  = "soakstorm"
)

func newLoad(t *workload.Dir, c Config, writes bool) (*load, error) {
	l := &load{t: t, c: c, present: make([]bool, churnSlots), total: errtally.ErrorTally{}}
	for _, r := range c.Readers {
		op, missing := workload.Op(r), false
		if r == Missing {
			op, missing = workload.OpOpenReadClose, true
		}
		ws, err := c.Workers(t, op, missing, c.PerOp)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			l.readers = append(l.readers, &reader{actor: newActor(), w: w, path: w.Path()})
		}
	}
	if !writes {
		return l, nil
	}
	if err := t.Stat(t.Path(client.NewDevicePath)); err != nil {
		return nil, setting.NewError("Dir", "soak a kernfsim mount", "%s: %v: no kernfsim device control files", t.Path(client.NewDevicePath), err)
	}
	var devs []string
	for i := range max(churnSlots, c.StormSize) {
		devs = append(devs, t.Path(client.DevicesDir+"/"+churnName+strconv.Itoa(i%churnSlots)+"/"+deviceFile))
		if i < c.StormSize {
			devs = append(devs, t.Path(client.DevicesDir+"/"+stormName+strconv.Itoa(i)+"/"+deviceFile))
		}
	}
	l.readers = append(l.readers, &reader{actor: newActor(), devices: devs})
	l.writers = []*actor{newActor(), newActor()}
	return l, nil
}

func (l *load) start() {
	l.stopCh = make(chan struct{})
	for _, r := range l.readers {
		l.wg.Add(1)
		go func() { defer l.wg.Done(); l.read(r) }()
	}
	if len(l.writers) > 0 {
		l.wg.Add(2)
		go func() { defer l.wg.Done(); l.churn(l.writers[0]) }()
		go func() { defer l.wg.Done(); l.storm(l.writers[1]) }()
	}
}

func (l *load) stop() {
	close(l.stopCh)
	l.wg.Wait()
}

func (l *load) stopped() bool {
	select {
	case <-l.stopCh:
		return true
	default:
		return false
	}
}

// read loops one reader until the segment ends. The device reader reads
// each device's uevent in turn (ENOENT and ENODEV expected: the device
// may be gone) and lists devices/kernfsim every fourth time.
func (l *load) read(r *reader) {
	buf, dbuf := make([]byte, workload.DefaultBufSize), make([]byte, 8192)
	for j := 0; !l.stopped(); j++ {
		t0 := time.Now()
		switch {
		case r.devices == nil:
			err := r.w.Do()
			r.record(time.Since(t0), err, false, r.path)
		case j%listEvery == listEvery-1:
			dir := l.t.Path(client.DevicesDir)
			err := l.t.ReadDir(dir, dbuf)
			r.record(time.Since(t0), err, false, dir)
		default:
			p := r.devices[j%len(r.devices)]
			err := l.t.ReadFile(p, buf)
			r.record(time.Since(t0), err, true, p)
		}
	}
}

// churn adds or removes one of churnSlots devices at c.Churn changes
// per second until the segment ends.
func (l *load) churn(a *actor) {
	every := time.Duration(float64(time.Second) / l.c.Churn)
	next := time.Now()
	for i := 0; !l.stopped(); i = (i + 1) % churnSlots {
		name := churnName + strconv.Itoa(i)
		var err error
		if l.present[i] {
			err = l.t.Write(client.DeleteDevicePath, client.DeleteDevicesLine(name))
		} else {
			err = l.t.Write(client.NewDevicePath, client.NewDeviceLine(name, 2))
		}
		a.record(0, err, false, name)
		if err == nil {
			l.present[i] = !l.present[i]
			l.changes.Add(1)
		}
		next = next.Add(every)
		if d := time.Until(next); d > 0 {
			l.sleep(d)
		} else if d < -time.Second {
			next = time.Now() // far behind: do not burst to catch up
		}
	}
}

// storm creates StormSize devices, then deletes them all with one write
// (one grace period under rcu), every StormEvery until the segment ends.
func (l *load) storm(a *actor) {
	for l.sleep(l.c.StormEvery) && l.c.StormSize > 0 {
		var names []string
		for i := range l.c.StormSize {
			name := stormName + strconv.Itoa(i)
			err := l.t.Write(client.NewDevicePath, client.NewDeviceLine(name, 1))
			a.record(0, err, false, name)
			if err == nil {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		err := l.t.Write(client.DeleteDevicePath, client.DeleteDevicesLine(names...))
		a.record(0, err, false, stormName+"*")
		if err == nil {
			l.storms.Add(1)
			l.torn.Add(int64(len(names)))
		}
	}
}

// sleep waits d or until the segment ends; false if it ended.
func (l *load) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.stopCh:
		return false
	case <-t.C:
		return true
	}
}

// drain returns the interval's reader operations, their latencies and
// every failure since the last drain, folding them into the totals.
func (l *load) drain() (int64, *hdrhistogram.Histogram, errtally.ErrorTally) {
	h, errs := latency.NewHistogram(), errtally.ErrorTally{}
	var n int64
	for _, r := range l.readers {
		n += r.drain(h, errs)
	}
	for _, w := range l.writers {
		w.drain(h, errs)
	}
	l.total.Merge(errs)
	l.totalOps += n
	return n, h, errs
}

func (l *load) ops() int64 { return l.totalOps }

// finish removes the churned devices left present and folds in the last
// tallies. The load must be stopped.
func (l *load) finish() {
	var names []string
	for i, p := range l.present {
		if p {
			names = append(names, churnName+strconv.Itoa(i))
		}
	}
	if len(names) > 0 {
		if err := l.t.Write(client.DeleteDevicePath, client.DeleteDevicesLine(names...)); err != nil {
			l.writers[0].record(0, err, false, strings.Join(names, " "))
		}
	}
	l.drain()
}
