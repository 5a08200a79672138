package soak

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/series"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
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
	// goroutineSlack is how many goroutines a server may add after
	// warm-up whatever Tolerance says: go-fuse spawns /dev/fuse readers
	// on demand, and a server on io_uring runs only about ten.
	goroutineSlack = 4
	// Missing names the missing-file reader among Config.Readers.
	Missing = "missing"
)

// DefaultLocks are the lock modes a soak runs in turn: every mode
// that takes writers (none refuses them).
var DefaultLocks = locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })

// DefaultReaders are the readers' operations.
var DefaultReaders = []string{string(workload.OpOpenReadClose), string(workload.OpStat), string(workload.OpReaddir), string(workload.OpWalk), Missing}

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
	Server    *serverproc.ServerConfig // starts each mode's server (Lock is set per mode)
	// Workers makes the readers of each operation (loadgen.Workers).
	Workers workload.WorkerSource
	Readers []string // operations (Ops, or Missing); nil means DefaultReaders
	PerOp   int      // readers per operation; 0 means DefaultPerOp
	Churn   float64  // device changes per second; 0 means DefaultChurn
	// A teardown storm creates StormSize devices, then deletes them all
	// with one write, every StormEvery.
	StormEvery time.Duration
	StormSize  int
	Tolerance  float64 // 0 means DefaultTolerance
	// RSSSlack is how many bytes RSS may grow beyond Tolerance; 0 means
	// DefaultRSSSlack, negative none. The runtime retains what go-fuse's
	// bursts of reader goroutines once needed (its heap and stacks' high
	// water, and freed pages up to its heap goal), so RSS wanders with no
	// leak; scripts/measure/rss.sh shows by how much.
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
	P99       time.Duration         // of the interval's reader operations
	Errors    []errtally.ErrorCount // failures in the interval, readers' and writers'
	Server    ServerLevel
	Changes   int64 // churn changes and storms in the mode so far
	Storms    int64
}

// Mode is what one lock mode's soak did and found.
type Mode struct {
	Lock     string
	Elapsed  time.Duration
	Ops      int64
	Errors   []errtally.ErrorCount // every failure in the mode, unexpected first
	Changes  int64                 // churn adds and removes
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
		return setting.NewError("Duration", "give positive durations", "negative duration, interval, warm-up or storm period")
	case mode < 2*time.Second:
		return setting.NewError("Duration", "give at least 2s per lock mode", "%v for %d lock modes is too short", c.Duration, len(c.Locks))
	case c.Warmup >= mode:
		return setting.NewError("Warmup", "make the warm-up shorter than each mode's share", "warm-up %v, but each mode runs %v", c.Warmup, mode)
	case c.PerOp < 0 || c.Churn < 0 || c.Tolerance < 0:
		return setting.NewError("PerOp", "give 0 or more", "a negative reader count, churn rate or tolerance")
	case c.StormSize < 0 || c.StormSize > 256:
		return setting.NewError("StormSize", "give 1 to 256 (one delete_device write names them all)", "%d devices per storm", c.StormSize)
	case c.Dir == "" && c.Server == nil:
		return serverproc.ErrNoServer
	case c.Dir != "" && c.ServerPID <= 0:
		return setting.NewError("ServerPID", "give the server's process id (pidof kernfsim)", "soaking %s needs its server's process, for its RSS and threads", c.Dir)
	}
	if limit, why := limits.ThreadLimit(); c.PerOp*len(c.Readers) > limit {
		return setting.NewError("PerOp", fmt.Sprintf("give at most %d readers per operation", limit/len(c.Readers)),
			"%d readers for each of %d operations are more threads than this process may start (%s)", c.PerOp, len(c.Readers), why)
	}
	for _, l := range c.Locks {
		if c.Dir == "" && !slices.Contains(locking.Names, l) {
			return setting.NewError("Lock", "valid strategies are "+strings.Join(locking.Names, ", "), "unknown lock strategy %q", l)
		}
	}
	for _, r := range c.Readers {
		if r != Missing && (!slices.Contains(workload.Ops, workload.Op(r)) || workload.Op(r) == workload.OpHwloc) {
			return setting.NewError("Op", "valid readers are open-read-close, stat, readdir, walk, same-file, random, missing", "unknown reader %q", r)
		}
	}
	if c.Workers == nil {
		return setting.NewError("Workers", "set it to loadgen.Workers", "no source of readers")
	}
	return nil
}

// Run runs the soak c describes, mode after mode, and returns what each
// found. A mode's failed conditions are in the result (Failures), not the
// error; the error is bad input (*ConfigError), a server that could not
// start or died (saying how to recover a Config.Dir mount), or ctx's end
// (Interrupted is then set).
func Run(ctx context.Context, c Config) (Result, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return Result{}, err
	}
	var res Result
	per := c.Duration / time.Duration(len(c.Locks))
	var err error
	res.Interrupted, err = series.RunEach(ctx, c.Locks, func(lock string) (Mode, error) { return runMode(ctx, c, lock, per) },
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

// runMode runs one mode for d on a server of its own (or on c.Dir).
func runMode(ctx context.Context, c Config, lock string, d time.Duration) (m Mode, err error) {
	p, err := openServer(ctx, c, lock)
	if err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, p.close()) }()
	m.Lock = p.lockName
	if m.Baseline, err = p.forget(ctx, -1); err != nil {
		return m, err
	}
	l, err := newLoad(p.t, c, targets.AcceptsWriters(m.Lock))
	if err != nil {
		return m, err
	}
	warm := cmp.Or(c.Warmup, d/4)
	s := &sampler{c: c, p: p, l: l, lock: m.Lock, t0: time.Now(), warmEnd: warm}
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
	grew("goroutines", m.Warm.Goroutines, m.End.Goroutines, goroutineSlack, itoa64)
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
