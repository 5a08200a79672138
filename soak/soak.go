package soak

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/textout"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/locking"
)

// Soak defaults.
const (
	DefaultDuration   = 10 * time.Minute
	DefaultInterval   = 10 * time.Second
	DefaultPerOp      = 2   // readers per operation
	DefaultChurn      = 100 // device changes per second
	DefaultStormEvery = 2 * time.Second
	DefaultStormSize  = 64
	DefaultTolerance  = 0.10
	// DefaultRSSSlack is how far RSS may grow beyond Tolerance: the
	// Go runtime's retention (see Config.RSSSlack).
	DefaultRSSSlack = 16 << 20
	// Missing names the missing-file reader among Config.Readers.
	Missing = "missing"
)

// DefaultLocks are the lock modes a soak runs in turn: every mode
// that takes writers (none refuses them).
var DefaultLocks = locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })

// DefaultReaders are the readers' operations.
var DefaultReaders = []string{string(loadgen.OpOpenReadClose), string(loadgen.OpStat), string(loadgen.OpReaddir), string(loadgen.OpWalk), Missing}

// Config is a soak: readers on every operation, device churn and
// teardown storms against a kernfsim mount, under each lock mode in turn,
// each on a server of its own. It checks three conditions per mode: no
// unexpected errno; the server's RSS and goroutines at the end within
// Tolerance of their level after warm-up; the nodeid table back to its
// baseline once the kernel forgets (drop_caches).
type Config struct {
	Duration time.Duration // the whole soak, shared equally by the modes; 0 means DefaultDuration
	Interval time.Duration // between samples; 0 means DefaultInterval
	// Warmup is the load before the reference level is taken, per mode;
	// 0 means a quarter of each mode's time.
	Warmup time.Duration
	Locks  []string // the modes in turn; nil means DefaultLocks
	// Dir soaks the kernfsim mount there instead (one mode, its own lock)
	// whose server is the process ServerPID.
	Dir       string
	ServerPID int
	Server    *loadgen.ServerConfig // starts each mode's server (Lock is set per mode)
	Readers   []string              // operations (Ops, or Missing); nil means DefaultReaders
	PerOp     int                   // readers per operation; 0 means DefaultPerOp
	Churn     float64               // device changes per second; 0 means DefaultChurn
	// A teardown storm creates StormSize devices, then deletes them all
	// with one write, every StormEvery.
	StormEvery time.Duration
	StormSize  int
	Tolerance  float64 // 0 means DefaultTolerance
	// RSSSlack is how many bytes RSS may grow beyond Tolerance; 0 means
	// DefaultRSSSlack, negative none. The server's live heap is a few
	// MiB (a default tree) while the runtime retains what go-fuse's
	// bursts of reader goroutines once needed: its heap and stacks' high
	// water and up to its heap goal (twice the live heap) in freed pages,
	// so RSS wanders by a few MiB either way in a minute with no leak.
	RSSSlack int64
	// OnSample and OnMode, if not nil, are called with each sample and
	// each finished mode, from Soak's goroutine.
	OnSample func(Sample)
	OnMode   func(Mode)
}

// ServerLevel is what a server process holds at one moment.
type ServerLevel struct {
	RSS        int64 // bytes (VmRSS)
	Threads    int64 // OS threads (/proc/PID/status)
	Goroutines int64 // server.goroutines of the stats file
	Nodeids    int64 // server.nodeids: the nodeid table's size
	OpenFiles  int64 // server.open_files
}

// Sample is one periodic sample of a mode.
type Sample struct {
	Lock      string
	Elapsed   time.Duration // since the mode's load began
	Warmup    bool          // taken during warm-up
	Ops       int64         // reader operations in the interval
	OpsPerSec float64
	P99       time.Duration        // of the interval's reader operations
	Errors    []loadgen.ErrorCount // failures in the interval, readers' and writers'
	Server    ServerLevel
	Changes   int64 // churn changes and storms in the mode so far
	Storms    int64
}

// Mode is what one lock mode's soak did and found.
type Mode struct {
	Lock     string
	Elapsed  time.Duration
	Ops      int64
	Errors   []loadgen.ErrorCount // every failure in the mode, unexpected first
	Changes  int64                // churn adds and removes
	Storms   int64
	Torn     int64       // devices torn down by storms
	Warm     ServerLevel // settled (see settle), after warm-up
	End      ServerLevel // settled, after the load
	Baseline int64       // nodeids after drop_caches, before the load
	Forgot   int64       // nodeids after drop_caches, after the load
	Failures []string    // the conditions that failed, in words
	// Tolerance and RSSSlack are the limits the levels were checked
	// against (Config's).
	Tolerance float64
	RSSSlack  int64
}

// Result is a whole soak.
type Result struct {
	Modes       []Mode
	Interrupted bool
}

// Failures are every mode's failed conditions, each prefixed by its mode.
func (r Result) Failures() []string {
	var out []string
	for _, m := range r.Modes {
		for _, f := range m.Failures {
			out = append(out, "lock="+m.Lock+": "+f)
		}
	}
	return out
}

func (c Config) withDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.Duration, DefaultDuration)
	set(&c.Interval, DefaultInterval)
	set(&c.StormEvery, DefaultStormEvery)
	if c.Locks == nil {
		c.Locks = DefaultLocks
	}
	if c.Dir != "" {
		c.Locks = []string{""} // the mount's own, read from its stats file
	}
	if c.Readers == nil {
		c.Readers = DefaultReaders
	}
	c.PerOp = cmp.Or(c.PerOp, DefaultPerOp)
	c.Churn = cmp.Or(c.Churn, DefaultChurn)
	c.StormSize = cmp.Or(c.StormSize, DefaultStormSize)
	c.Tolerance = cmp.Or(c.Tolerance, DefaultTolerance)
	c.RSSSlack = max(cmp.Or(c.RSSSlack, DefaultRSSSlack), 0)
	return c
}

func (c Config) validate() error {
	mode := c.Duration / time.Duration(len(c.Locks))
	switch {
	case c.Duration < 0 || c.Interval <= 0 || c.Warmup < 0 || c.StormEvery < 0:
		return loadgen.BadConfig("Duration", "give positive durations", "negative duration, interval, warm-up or storm period")
	case mode < 2*time.Second:
		return loadgen.BadConfig("Duration", "give at least 2s per lock mode", "%v for %d lock modes is too short", c.Duration, len(c.Locks))
	case c.Warmup >= mode:
		return loadgen.BadConfig("Warmup", "make the warm-up shorter than each mode's share", "warm-up %v, but each mode runs %v", c.Warmup, mode)
	case c.PerOp < 0 || c.Churn < 0 || c.Tolerance < 0:
		return loadgen.BadConfig("PerOp", "give 0 or more", "a negative reader count, churn rate or tolerance")
	case c.StormSize < 0 || c.StormSize > 256:
		return loadgen.BadConfig("StormSize", "give 1 to 256 (one delete_device write names them all)", "%d devices per storm", c.StormSize)
	case c.Dir == "" && c.Server == nil:
		return loadgen.ErrNoServer
	case c.Dir != "" && c.ServerPID <= 0:
		return loadgen.BadConfig("ServerPID", "give the server's process id (pidof kernfsim)", "soaking %s needs its server's process, for its RSS and threads", c.Dir)
	}
	if limit, why := loadgen.ThreadLimit(); c.PerOp*len(c.Readers) > limit {
		return loadgen.BadConfig("PerOp", fmt.Sprintf("give at most %d readers per operation", limit/len(c.Readers)),
			"%d readers for each of %d operations are more threads than this process may start (%s)", c.PerOp, len(c.Readers), why)
	}
	for _, l := range c.Locks {
		if c.Dir == "" && !slices.Contains(locking.Names, l) {
			return loadgen.BadConfig("Lock", "valid strategies are "+strings.Join(locking.Names, ", "), "unknown lock strategy %q", l)
		}
	}
	for _, r := range c.Readers {
		if r != Missing && (!slices.Contains(loadgen.Ops, loadgen.Op(r)) || loadgen.Op(r) == loadgen.OpHwloc) {
			return loadgen.BadConfig("Op", "valid readers are open-read-close, stat, readdir, walk, same-file, random, missing", "unknown reader %q", r)
		}
	}
	return nil
}

// Run runs the soak c describes, mode after mode, and returns what each
// found. A mode's failed conditions are in the result (Failures), not the
// error; the error is bad input (*ConfigError), a server that could not
// start or died (saying how to recover a --path mount), or ctx's end
// (Interrupted is then set).
func Run(ctx context.Context, c Config) (Result, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return Result{}, err
	}
	var res Result
	per := c.Duration / time.Duration(len(c.Locks))
	var err error
	res.Interrupted, err = loadgen.RunEach(ctx, c.Locks, func(lock string) (Mode, error) { return soakMode(ctx, c, lock, per) },
		func(m Mode, err error) {
			if m.Lock != "" {
				res.Modes = append(res.Modes, m)
				if c.OnMode != nil && err == nil {
					c.OnMode(m)
				}
			}
		})
	return res, err
}

// soakMode runs one mode for d on a server of its own (or on c.Dir).
func soakMode(ctx context.Context, c Config, lock string, d time.Duration) (m Mode, err error) {
	p, err := openSoakServer(ctx, c, lock)
	if err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, p.close()) }()
	m.Lock = p.lockName
	if m.Baseline, err = p.forget(ctx, -1); err != nil {
		return m, err
	}
	l, err := newSoakLoad(p.t, c, loadgen.LockTraits(m.Lock).AcceptsWriters)
	if err != nil {
		return m, err
	}
	warm := cmp.Or(c.Warmup, d/4)
	s := &soakSampler{c: c, p: p, l: l, lock: m.Lock, t0: time.Now(), warmEnd: warm}
	if m.Warm, err = s.segment(ctx, warm); err == nil {
		m.End, err = s.segment(ctx, d-warm)
	}
	l.finish()
	m.Elapsed, m.Ops, m.Errors = time.Since(s.t0), l.ops(), l.total.Sorted()
	m.Changes, m.Storms, m.Torn = l.changes.Load(), l.storms.Load(), l.torn.Load()
	if err != nil {
		return m, err
	}
	if m.Forgot, err = p.forget(ctx, m.Baseline); err != nil {
		return m, err
	}
	m.Tolerance, m.RSSSlack = c.Tolerance, c.RSSSlack
	m.Failures = m.check()
	return m, nil
}

// check returns the conditions m fails. A level that fell is no leak;
// one that grew by more than m.Tolerance (and, for RSS, m.RSSSlack) is.
func (m Mode) check() []string {
	var f []string
	var bad []string
	var n int64
	for _, e := range m.Errors {
		if !e.Expected() {
			n += e.Count
			bad = append(bad, fmt.Sprintf("%s x%d on %s", e.Name(), e.Count, e.Path))
		}
	}
	if n > 0 {
		f = append(f, fmt.Sprintf("%d unexpected errors (%s)", n, strings.Join(bad, "; ")))
	}
	grew := func(what string, warm, end, slack int64, unit func(int64) string) {
		if float64(end) > float64(warm)*(1+m.Tolerance) && end-warm > slack {
			f = append(f, fmt.Sprintf("server %s grew %.1f%% after warm-up (%s, then %s at the end; at most %s allowed)",
				what, 100*(float64(end)/float64(warm)-1), unit(warm), unit(end), m.allowed(slack, unit)))
		}
	}
	grew("RSS", m.Warm.RSS, m.End.RSS, m.RSSSlack, fmtMiB)
	grew("goroutines", m.Warm.Goroutines, m.End.Goroutines, 0, itoa64)
	if m.Forgot != m.Baseline {
		f = append(f, fmt.Sprintf("nodeid table not back to baseline after drop_caches (%d nodeids, baseline %d)", m.Forgot, m.Baseline))
	}
	return f
}

// allowed says how far a level may grow: "+10%", or "+10% or +16.0 MiB".
func (m Mode) allowed(slack int64, unit func(int64) string) string {
	s := fmt.Sprintf("+%.0f%%", 100*m.Tolerance)
	if slack > 0 {
		s += " or +" + unit(slack)
	}
	return s
}

func fmtMiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func itoa64(v int64) string { return strconv.Itoa(int(v)) }

// soakSampler takes a mode's periodic samples while its load runs.
type soakSampler struct {
	c       Config
	p       *soakServer
	l       *soakLoad
	lock    string
	t0      time.Time
	warmEnd time.Duration
	last    time.Time // the previous sample
}

// segment runs the load for d, sampling every interval, then stops it
// and returns the server's settled level.
func (s *soakSampler) segment(ctx context.Context, d time.Duration) (ServerLevel, error) {
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

func (s *soakSampler) sample() error {
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

// soakActor is one reader or writer goroutine's tallies, drained by the
// sampler.
type soakActor struct {
	mu   sync.Mutex
	hist *hdrhistogram.Histogram // this interval's latencies; protected by mu
	ops  int64                   // operations in this interval; protected by mu
	errs loadgen.ErrorTally      // this interval's failures; protected by mu
}

func newSoakActor() *soakActor {
	return &soakActor{hist: loadgen.NewHistogram(), errs: loadgen.ErrorTally{}}
}

// record adds one operation that took d and failed with err (or not);
// expected marks a failure churn explains when it is ENOENT or ENODEV.
func (a *soakActor) record(d time.Duration, err error, expected bool, path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d > 0 {
		a.ops++
		loadgen.RecordLatency(a.hist, d)
	}
	if err != nil {
		a.errs.Add(kernfsim.Errno(err), expected, path, 1)
	}
}

// drain returns and resets the actor's interval tallies.
func (a *soakActor) drain(h *hdrhistogram.Histogram, errs loadgen.ErrorTally) int64 {
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

// soakLoad is a mode's load: readers on every operation, a reader of the
// churned devices, the churner and the storms. It runs in segments
// (start, stop) so that the server can settle and be measured between
// them.
type soakLoad struct {
	t       *loadgen.Dir
	c       Config
	readers []*soakReader
	writers []*soakActor // the churner's and the storms' failures
	present []bool       // churn slots; owned by the churner while it runs
	changes atomic.Int64
	storms  atomic.Int64
	torn    atomic.Int64
	stopCh  chan struct{} // closed to end a segment
	wg      sync.WaitGroup
	// total and totalOps are every failure and operation so far: owned by
	// the sampler's goroutine, which folds the actors' tallies in.
	total    loadgen.ErrorTally
	totalOps int64
}

// soakReader is a reader goroutine's state: an operation's worker, or
// (devices set) the reader of the churned and stormed devices.
type soakReader struct {
	*soakActor
	w       *loadgen.Worker
	path    string
	devices []string
}

const (
	deviceFile     = "uevent" // what the device reader reads of each device
	listEvery      = 4        // the device reader lists devices/kernfsim every listEvery reads
	soakChurnSlots = 8
	soakChurnName  = "soakchurn"
	soakStormName  = "soakstorm"
)

func newSoakLoad(t *loadgen.Dir, c Config, writes bool) (*soakLoad, error) {
	l := &soakLoad{t: t, c: c, present: make([]bool, soakChurnSlots), total: loadgen.ErrorTally{}}
	for _, r := range c.Readers {
		cfg := loadgen.Config{Op: loadgen.Op(r), Threads: c.PerOp, Files: c.PerOp}
		if r == Missing {
			cfg.Op, cfg.Missing = loadgen.OpOpenReadClose, true
		}
		ws, err := t.Workers(cfg)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			l.readers = append(l.readers, &soakReader{soakActor: newSoakActor(), w: w, path: w.Path()})
		}
	}
	if !writes {
		return l, nil
	}
	if err := t.Stat(t.Path(client.NewDevicePath)); err != nil {
		return nil, loadgen.BadConfig("Dir", "soak a kernfsim mount", "%s: %v: no kernfsim device control files", t.Path(client.NewDevicePath), err)
	}
	var devs []string
	for i := range max(soakChurnSlots, c.StormSize) {
		devs = append(devs, t.Path(client.DevicesDir+"/"+soakChurnName+strconv.Itoa(i%soakChurnSlots)+"/"+deviceFile))
		if i < c.StormSize {
			devs = append(devs, t.Path(client.DevicesDir+"/"+soakStormName+strconv.Itoa(i)+"/"+deviceFile))
		}
	}
	l.readers = append(l.readers, &soakReader{soakActor: newSoakActor(), devices: devs})
	l.writers = []*soakActor{newSoakActor(), newSoakActor()}
	return l, nil
}

func (l *soakLoad) start() {
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

func (l *soakLoad) stop() {
	close(l.stopCh)
	l.wg.Wait()
}

func (l *soakLoad) stopped() bool {
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
func (l *soakLoad) read(r *soakReader) {
	buf, dbuf := make([]byte, loadgen.DefaultBufSize), make([]byte, 8192)
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

// churn adds or removes one of soakChurnSlots devices at c.Churn changes
// per second until the segment ends.
func (l *soakLoad) churn(a *soakActor) {
	every := time.Duration(float64(time.Second) / l.c.Churn)
	next := time.Now()
	for i := 0; !l.stopped(); i = (i + 1) % soakChurnSlots {
		name := soakChurnName + strconv.Itoa(i)
		var err error
		if l.present[i] {
			err = l.t.Write(client.DeleteDevicePath, client.DeleteDevices(name))
		} else {
			err = l.t.Write(client.NewDevicePath, client.NewDevice(name, 2))
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
func (l *soakLoad) storm(a *soakActor) {
	for l.sleep(l.c.StormEvery) && l.c.StormSize > 0 {
		var names []string
		for i := range l.c.StormSize {
			name := soakStormName + strconv.Itoa(i)
			err := l.t.Write(client.NewDevicePath, client.NewDevice(name, 1))
			a.record(0, err, false, name)
			if err == nil {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		err := l.t.Write(client.DeleteDevicePath, client.DeleteDevices(names...))
		a.record(0, err, false, soakStormName+"*")
		if err == nil {
			l.storms.Add(1)
			l.torn.Add(int64(len(names)))
		}
	}
}

// sleep waits d or until the segment ends; false if it ended.
func (l *soakLoad) sleep(d time.Duration) bool {
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
func (l *soakLoad) drain() (int64, *hdrhistogram.Histogram, loadgen.ErrorTally) {
	h, errs := loadgen.NewHistogram(), loadgen.ErrorTally{}
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

func (l *soakLoad) ops() int64 { return l.totalOps }

// finish removes the churned devices left present and folds in the last
// tallies. The load must be stopped.
func (l *soakLoad) finish() {
	var names []string
	for i, p := range l.present {
		if p {
			names = append(names, soakChurnName+strconv.Itoa(i))
		}
	}
	if len(names) > 0 {
		if err := l.t.Write(client.DeleteDevicePath, client.DeleteDevices(names...)); err != nil {
			l.writers[0].record(0, err, false, strings.Join(names, " "))
		}
	}
	l.drain()
}

// soakServer is the kernfsim server a mode soaks: one Soak started, or
// the one behind Config.Dir.
type soakServer struct {
	srv      *loadgen.Server // nil for Config.Dir
	t        *loadgen.Dir
	pid      int
	lockName string // from the stats file
}

func openSoakServer(ctx context.Context, c Config, lock string) (p *soakServer, err error) {
	p = &soakServer{pid: c.ServerPID}
	dir := c.Dir
	if dir == "" {
		sc := *c.Server
		sc.Lock = lock
		if p.srv, err = loadgen.StartServer(ctx, sc); err != nil {
			return nil, err
		}
		dir, p.pid = p.srv.Mountpoint(), p.srv.Pid()
	}
	p.t, err = loadgen.OpenDir(dir)
	if err == nil {
		p.lockName, err = p.lock()
	}
	if err != nil {
		return nil, errors.Join(err, p.close())
	}
	return p, nil
}

func (p *soakServer) close() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.Close()
}

// stats reads the mount's kernel/kernfsim/stats.
func (p *soakServer) stats() (client.Stats, error) { return client.ReadStats(p.t.Path("")) }

// lock is the mount's lock strategy, from its stats file.
func (p *soakServer) lock() (string, error) {
	s, err := p.stats()
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, client.ErrNotStats) || err == nil && !s.Served {
		return "", loadgen.BadConfig("Dir", "soak a kernfsim mount", "%s is not a kernfsim mount: no server.lock and server.nodeids in kernel/kernfsim/stats", p.t.Path(""))
	}
	if err != nil {
		return "", p.gone(err, nil)
	}
	return s.Lock, nil
}

// level reads the server's counters and its process's RSS and threads.
func (p *soakServer) level() (ServerLevel, error) {
	s, err := p.stats()
	if err != nil {
		return ServerLevel{}, err
	}
	lv, err := p.process()
	lv.Goroutines, lv.Nodeids, lv.OpenFiles = int64(s.Goroutines), int64(s.Nodeids), int64(s.OpenFiles)
	return lv, err
}

// process reads the server process's RSS and threads (/proc/PID/status).
func (p *soakServer) process() (ServerLevel, error) {
	var lv ServerLevel
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
	if err != nil {
		return lv, fmt.Errorf("the server's process %d: %w", p.pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if f := strings.Fields(v); len(f) > 0 && (k == "VmRSS" || k == "Threads") {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			if k == "VmRSS" {
				lv.RSS = n << 10 // kB
			} else {
				lv.Threads = n
			}
		}
	}
	return lv, nil
}

// Settling lasts at least soakSettle, and at most soakSettleMax while
// RSS still falls.
const (
	soakSettle    = 2 * time.Second
	soakSettleMax = 15 * time.Second
)

// settle reads the server's level from one thread, back to back, until
// RSS has not fallen for soakSettle/2 (at least soakSettle, at most
// soakSettleMax), and returns the last reading with the median RSS and
// the fewest goroutines of the final soakSettle/2. Under load, go-fuse's
// readers set off bursts of thousands of goroutines (each completed read
// spawns a reader while none is registered, and those still waiting for
// reqMu are not counted), whose stacks keep RSS up until the server next
// collects garbage and scavenges; one client at a time sets off no
// burst, and the garbage of its reads makes the server collect. What
// remains is the server's own, comparable between two settles.
func (p *soakServer) settle(ctx context.Context) (ServerLevel, error) {
	type reading struct {
		at time.Duration
		lv ServerLevel
	}
	var rs []reading
	low, lowAt := int64(math.MaxInt64), time.Duration(0)
	t0 := time.Now()
	for d := time.Duration(0); d < soakSettle || d-lowAt < soakSettle/2 && d < soakSettleMax; d = time.Since(t0) {
		if err := ctx.Err(); err != nil {
			return ServerLevel{}, err
		}
		l, err := p.level()
		if err != nil {
			return ServerLevel{}, p.gone(err, nil)
		}
		rs = append(rs, reading{d, l})
		if l.RSS < low-low/100 { // fell by more than 1%
			low, lowAt = l.RSS, d
		}
	}
	last := rs[len(rs)-1]
	var rss []int64
	gs := last.lv.Goroutines
	for _, r := range rs {
		if r.at >= last.at-soakSettle/2 {
			rss, gs = append(rss, r.lv.RSS), min(gs, r.lv.Goroutines)
		}
	}
	slices.Sort(rss)
	lv := last.lv
	lv.RSS, lv.Goroutines = rss[len(rss)/2], gs
	return lv, nil
}

// dropCaches is where forget asks the kernel to drop dentries and inodes.
const dropCaches = "/proc/sys/vm/drop_caches"

// forget drops the kernel's dentry and inode caches, so that it FORGETs
// every nodeid it holds, and returns the nodeid table's size once it
// equals want or, with want < 0, once it holds still for 300 ms; after
// 10 s, the size then.
func (p *soakServer) forget(ctx context.Context, want int64) (int64, error) {
	var n, prev int64 = -1, -1
	for deadline, still := time.Now().Add(10*time.Second), 0; time.Now().Before(deadline); {
		if err := os.WriteFile(dropCaches, []byte("2\n"), 0); err != nil {
			return 0, fmt.Errorf("the nodeid-table check needs the kernel to forget (run as root): %w", err)
		}
		for range 3 {
			if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				return n, err
			}
			lv, err := p.level()
			if err != nil {
				return n, p.gone(err, nil)
			}
			prev, n = n, lv.Nodeids
			if n == prev {
				still++
			} else {
				still = 0
			}
			if n == want || (want < 0 && still >= 3) {
				return n, nil
			}
		}
	}
	return n, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// gone explains err from the mount or the server's process: a server
// Soak started that died, or a mount whose server went away (with the
// way to recover it); tally has the failures so far.
func (p *soakServer) gone(err error, tally loadgen.ErrorTally) error {
	dead := kernfsim.Errno(err) == syscall.ENOTCONN || !p.alive()
	switch {
	case p.srv != nil && (dead || p.srv.Exited()):
		status := "its mount stopped answering"
		if exit, ok := p.srv.ExitStatus(2 * time.Second); ok {
			status = fmt.Sprint(exit)
		}
		return fmt.Errorf("the kernfsim server died during the soak (%s): %s", status, p.srv.Stderr())
	case p.srv == nil && dead:
		return loadgen.ServerGone(p.t.Path(""), tally)
	}
	return err
}

func (p *soakServer) alive() bool { return p.pid <= 0 || syscall.Kill(p.pid, 0) == nil }

// WriteSample writes one periodic line of key=value fields:
//
//	soak lock=rwsem t=10s ops/s=41234 p99=120us errors=none rss=24.1MiB goroutines=12 threads=9 nodeids=143 changes=1000 storms=5
//
// A sample taken during warm-up says warm-up after t=.
func WriteSample(w io.Writer, s Sample) error {
	warm := ""
	if s.Warmup {
		warm = " warm-up"
	}
	_, err := fmt.Fprintf(w, "soak lock=%s t=%s%s ops/s=%.0f p99=%s errors=%s rss=%.1fMiB goroutines=%d threads=%d nodeids=%d changes=%d storms=%d\n",
		s.Lock, s.Elapsed.Round(time.Second), warm, s.OpsPerSec, textout.Dur(s.P99), soakErrors(s.Errors),
		float64(s.Server.RSS)/(1<<20), s.Server.Goroutines, s.Server.Threads, s.Server.Nodeids, s.Changes, s.Storms)
	return err
}

// soakErrors is "none" or ERRNO:COUNT by errno, comma-separated, the
// expected ones marked.
func soakErrors(errs []loadgen.ErrorCount) string {
	if len(errs) == 0 {
		return "none"
	}
	var s []string
	for _, e := range errs {
		mark := ""
		if e.Expected() {
			mark = "(expected)"
		}
		s = append(s, fmt.Sprintf("%s:%d%s", e.Name(), e.Count, mark))
	}
	return strings.Join(s, ",")
}

// WriteMode writes what a mode did and the three conditions' figures.
func WriteMode(w io.Writer, m Mode) error {
	ew := textout.NewWriter(w)
	pct := func(a, b int64) string {
		if a == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%+.1f%%", 100*(float64(b)/float64(a)-1))
	}
	ew.Printf("soak lock=%s done in %s: %d reader ops, %d device changes, %d storms (%d devices torn down)\n",
		m.Lock, m.Elapsed.Round(100*time.Millisecond), m.Ops, m.Changes, m.Storms, m.Torn)
	ew.Printf("  errors:      %s\n", soakErrors(m.Errors))
	ew.Printf("  rss:         %s after warm-up, %s at the end (%s; at most %s)\n",
		fmtMiB(m.Warm.RSS), fmtMiB(m.End.RSS), pct(m.Warm.RSS, m.End.RSS), m.allowed(m.RSSSlack, fmtMiB))
	ew.Printf("  goroutines:  %d after warm-up, %d at the end (%s; at most %s)\n",
		m.Warm.Goroutines, m.End.Goroutines, pct(m.Warm.Goroutines, m.End.Goroutines), m.allowed(0, itoa64))
	ew.Printf("  threads:     %d after warm-up, %d at the end (not checked: Go keeps idle OS threads)\n", m.Warm.Threads, m.End.Threads)
	ew.Printf("  nodeids:     %d after drop_caches, baseline %d (%d before it)\n", m.Forgot, m.Baseline, m.End.Nodeids)
	if len(m.Failures) == 0 {
		ew.Printf("  verdict:     ok\n")
	}
	for _, f := range m.Failures {
		ew.Printf("  FAILED:      %s\n", f)
	}
	return ew.Err()
}

// WriteSummary writes the soak's last line: ok, or the failed
// conditions.
func WriteSummary(w io.Writer, r Result) error {
	if f := r.Failures(); len(f) > 0 {
		_, err := fmt.Fprintf(w, "soak: FAILED: %s\n", strings.Join(f, "; "))
		return err
	}
	var locks []string
	for _, m := range r.Modes {
		locks = append(locks, m.Lock)
	}
	_, err := fmt.Fprintf(w, "soak: ok (%s): no unexpected errno; server RSS and goroutines within their limits of the level after warm-up; nodeid table back to baseline after drop_caches\n",
		strings.Join(locks, ", "))
	return err
}
