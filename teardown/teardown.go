package teardown

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernfsim/kernfsim/loadgen"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// Teardown defaults and limits.
const (
	DefaultCount = 5000 // the seed's 5000 mounts
	DefaultLock  = "rcu"
	// DefaultCompleteTimeout bounds the wait for teardowns on a mount.
	DefaultCompleteTimeout = 2 * time.Minute
	// GPNotApplicable is the gp of a run under a lock without grace
	// periods (mutex, rwsem: removal drains and tears down in the call).
	GPNotApplicable = "n/a"
	// teardownPrefix names the devices a storm creates: lgtd0, lgtd1, ...
	teardownPrefix = "lgtd"
	// teardownsPerDevice is what one device adds to tree.teardowns_*: its
	// directory and its class/kernfsim symlink (sysfs.ABI.Delete).
	teardownsPerDevice = 2
	tdStatsFile        = client.StatsPath
	tdReadFile         = "uevent" // what readers read of a remaining device
	tdPollEvery        = time.Millisecond
)

// Config is a set of teardown storms, one per (lock, gp).
type Config struct {
	// Target: TargetSim (a tree per run, in process), TargetKernfsim
	// without Dir (a server per run, started with Server), or a Dir
	// (TargetPath or TargetKernfsim) that is a kernfsim mount already: one
	// run under the mount's own lock and policy, which the stats file
	// tells (the policy is inferred from the counters; see Storm).
	Target loadgen.Target
	// Locks are the strategies; nil means DefaultLock. Under rcu
	// there is a run per GPs entry; mutex and rwsem get one run each (the
	// references: gp n/a). none refuses writers and is rejected.
	Locks []string
	// GPs are the rcu teardown policies; nil means all three.
	GPs []kernfsim.GPPolicy
	// Count is the devices created then removed; 0 means DefaultCount.
	Count int
	// Batch is the devices removed per call; 0 means 1.
	Batch int
	// Readers read uevent of devices not yet removed, at random, for the
	// whole storm; their latency is the reader-side price of each policy.
	Readers int
	// Attrs is each device's extra attributes (new_device NATTRS).
	Attrs int
	// Grace configures the rcu grace-period engine of sim trees and of the
	// servers started (--gp-tick, --expedite-cost, --rcu-normal).
	Grace locking.GraceConfig
	// Server starts the kernfsim servers of a TargetKernfsim without Dir.
	Server *loadgen.ServerConfig
	// CompleteTimeout bounds the wait for teardowns on a mount; 0 means
	// DefaultCompleteTimeout.
	CompleteTimeout time.Duration
	// Progress, if not nil, is called about five times a second while a
	// storm creates or removes devices.
	Progress func(Progress)
}

// Progress is where a storm stands.
type Progress struct {
	Lock, GP string
	Phase    string // "create", "remove"
	Done     int    // devices
	Total    int
	Elapsed  time.Duration
}

// Result is every storm of a Config, in order.
type Result struct {
	Target      loadgen.Target // Dir set for a path target
	Count       int
	Batch       int
	Readers     int
	Attrs       int
	Grace       locking.GraceConfig
	CPUs        int
	Runs        []Storm
	Interrupted bool
}

// Storm is one storm under one (lock, gp).
type Storm struct {
	Lock string
	// GP is the rcu policy, or GPNotApplicable. On an existing mount it is
	// inferred: deferred if teardowns were queued, else expedited if
	// expedited grace periods ran, else normal.
	GP      string
	Dir     string // the mountpoint; "" in process
	Count   int    // devices created
	Removed int    // devices removed: Count unless interrupted or failed
	Calls   int
	Create  time.Duration // creating the Count devices (before the storm)
	// Total is the storm's wall time: the first call's start to the last
	// call's return.
	Total time.Duration
	// Caller is the latency of each removal call, as its caller sees it.
	Caller loadgen.Latency
	// UntilComplete is the storm's start until every teardown had
	// completed: the barrier's return (sim) or the poll that saw them all.
	UntilComplete time.Duration
	// Completed is the devices whose teardown had completed then.
	Completed int
	Counts    Counts
	Reader    *ReaderResult // nil without readers
}

// Counts are the tree's counters over the storm and the wait
// (kernel/kernfsim/stats). Teardowns count nodes: two per device.
type Counts struct {
	Queued, Completed       uint64 // tree.teardowns_queued, tree.teardowns_completed
	GracePeriods, Expedited uint64 // grace.periods, grace.expedited
}

// ReaderResult is what the readers saw during a storm.
type ReaderResult struct {
	Readers int
	Latency loadgen.Latency // one open/read/close of a remaining device's uevent
	// Errors: ENOENT and ENODEV are expected (the device picked was being
	// removed) and marked so (ErrorCount.Churn).
	Errors []loadgen.ErrorCount
}

// Raced is the reads that found their device being removed.
func (r ReaderResult) Raced() int64 {
	var n int64
	for _, e := range r.Errors {
		if e.Expected() {
			n += e.Count
		}
	}
	return n
}

// teardownSpec is one storm's lock and policy.
type teardownSpec struct{ lock, gp string }

func (c Config) withDefaults() Config {
	if len(c.Locks) == 0 {
		c.Locks = []string{DefaultLock}
	}
	if len(c.GPs) == 0 {
		c.GPs = slices.Clone(kernfsim.GPPolicies)
	}
	c.Count, c.Batch = cmp.Or(c.Count, DefaultCount), cmp.Or(c.Batch, 1)
	if c.CompleteTimeout <= 0 {
		c.CompleteTimeout = DefaultCompleteTimeout
	}
	if c.Target.Kind == loadgen.TargetKernfsim && c.Target.Dir != "" {
		c.Target.Kind = loadgen.TargetPath
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Count <= 0 || c.Batch <= 0 || c.Readers < 0:
		return loadgen.BadConfig("Count", "give a positive count and batch, and 0 or more readers",
			"count %d, batch %d, readers %d", c.Count, c.Batch, c.Readers)
	case c.Batch > c.Count:
		return loadgen.BadConfig("Batch", "give at most --count", "batch %d is more than the %d devices", c.Batch, c.Count)
	case c.Count > loadgen.MaxSimDevices:
		return loadgen.BadConfig("Count", "give at most "+strconv.Itoa(loadgen.MaxSimDevices), "%d devices would take more memory than a storm needs", c.Count)
	case c.Attrs < 0 || c.Attrs > sysfs.MaxDeviceAttrs:
		return loadgen.BadConfig("Attrs", "give 0 to "+strconv.Itoa(sysfs.MaxDeviceAttrs), "%d attributes per device", c.Attrs)
	case c.Target.Kind != loadgen.TargetSim && c.Count > sysfs.DefaultMaxDevices:
		return loadgen.BadConfig("Count", "give at most "+strconv.Itoa(sysfs.DefaultMaxDevices)+" on a mount, or use --sim",
			"a kernfsim server makes at most %d devices", sysfs.DefaultMaxDevices)
	case c.Target.Kind != loadgen.TargetSim && c.Batch*(len(tdName(c.Count-1))+1) > kernfsim.PageSize:
		return loadgen.BadConfig("Batch", fmt.Sprintf("give at most %d on a mount, or use --sim (no page limit in process)",
			kernfsim.PageSize/(len(tdName(c.Count-1))+1)), "%d names do not fit one %d-byte write to delete_device",
			c.Batch, kernfsim.PageSize)
	}
	if err := loadgen.CheckThreads("Readers", c.Readers); err != nil {
		return err
	}
	for _, l := range c.Locks {
		if !loadgen.LockTraits(l).AcceptsWriters {
			return loadgen.BadConfig("Lock", "use "+loadgen.WriterLocks(), "lock %q cannot remove devices", l)
		}
	}
	switch c.Target.Kind {
	case loadgen.TargetSim:
		if err := c.Target.Tree.WithDefaults().Validate(); err != nil {
			return &loadgen.ConfigError{Field: "Tree", Problem: err.Error()}
		}
	case loadgen.TargetKernfsim:
		if c.Server == nil || len(c.Server.Command) == 0 {
			return loadgen.ErrNoServer
		}
	case loadgen.TargetPath:
		if c.Target.Dir == "" {
			return loadgen.BadConfig("Dir", "name a kernfsim mount", "a path target needs a directory")
		}
	default:
		return loadgen.BadConfig("Target", "use sim, kernfsim or a path", "unknown target kind %q", c.Target.Kind)
	}
	return nil
}

// specs are the storms to run, in order: per lock, per policy under rcu.
func (c Config) specs() []teardownSpec {
	if c.Target.Kind == loadgen.TargetPath {
		return []teardownSpec{{}}
	}
	var out []teardownSpec
	for _, l := range c.Locks {
		if !loadgen.LockTraits(l).GracePeriods {
			out = append(out, teardownSpec{l, GPNotApplicable})
			continue
		}
		for _, gp := range c.GPs {
			out = append(out, teardownSpec{l, string(gp)})
		}
	}
	return out
}

// tdName is device i's name.
func tdName(i int) string { return teardownPrefix + strconv.Itoa(i) }

// Run runs a storm per (lock, gp) and returns them all. A
// *ConfigError means bad input. When ctx is cancelled it stops the storm
// in progress and returns what was measured, with Interrupted set and
// ctx's error; servers it started are stopped (each runs a barrier before
// it unmounts, so no queued teardown is lost).
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	res := Result{Target: cfg.Target, Count: cfg.Count, Batch: cfg.Batch, Readers: cfg.Readers,
		Attrs: cfg.Attrs, Grace: cfg.Grace, CPUs: len(loadgen.AllowedCPUs())}
	if err := cfg.validate(); err != nil {
		return res, err
	}
	var err error
	res.Interrupted, err = loadgen.RunEach(ctx, cfg.specs(), func(sp teardownSpec) (Storm, error) { return teardownOne(ctx, cfg, sp) },
		func(run Storm, _ error) {
			if run.Calls > 0 {
				res.Runs = append(res.Runs, run)
			}
		})
	return res, err
}

// teardownOne sets up a target, creates the devices, runs the storm and
// waits for its teardowns.
func teardownOne(ctx context.Context, cfg Config, sp teardownSpec) (run Storm, err error) {
	t, err := openTeardownTarget(ctx, cfg, sp)
	if err != nil {
		return run, err
	}
	defer func() { err = errors.Join(err, t.close()) }()
	run = Storm{Lock: sp.lock, GP: sp.gp, Dir: t.dir(), Count: cfg.Count}
	s := newTDStorm(t, cfg, sp)
	if run.Create, err = s.create(ctx); err != nil {
		return run, err
	}
	base, err := t.counters()
	if err != nil {
		return run, err
	}
	runtime.GC() // the set-up's garbage is not collected on the storm's time
	var t0 time.Time
	t0, err = s.storm(ctx, &run)
	if err == nil && ctx.Err() == nil {
		err = t.awaitComplete(ctx, base, uint64(teardownsPerDevice*run.Removed), cfg.CompleteTimeout)
		run.UntilComplete = time.Since(t0)
	}
	after, cerr := t.counters()
	run.Counts = after.minus(base)
	run.Completed = int(run.Counts.Completed / teardownsPerDevice)
	if run.Lock == "" {
		run.Lock, run.GP = after.lock, inferGP(after.lock, run.Counts)
	}
	return run, errors.Join(err, cerr)
}

// inferGP is the policy a mount's counters show.
func inferGP(lock string, c Counts) string {
	switch {
	case !loadgen.LockTraits(lock).GracePeriods:
		return GPNotApplicable
	case c.Queued > 0:
		return string(kernfsim.GPDeferred)
	case c.Expedited > 0:
		return string(kernfsim.GPExpedited)
	}
	return string(kernfsim.GPNormal)
}

// tdCounters are a target's counters at one moment.
type tdCounters struct {
	lock    string
	pending uint64 // grace.callbacks_pending: deferred teardowns not yet run
	Counts
}

func (a tdCounters) minus(b tdCounters) Counts {
	return Counts{Queued: a.Queued - b.Queued, Completed: a.Completed - b.Completed,
		GracePeriods: a.GracePeriods - b.GracePeriods, Expedited: a.Expedited - b.Expedited}
}

// tdTarget is where a storm creates, removes and reads devices. Its
// methods are safe for concurrent use (readers read during the storm).
type tdTarget interface {
	create(name string, attrs int) error
	remove(names []string) error
	read(name string, buf []byte) error
	counters() (tdCounters, error)
	// awaitComplete returns once want more teardowns than base have
	// completed.
	awaitComplete(ctx context.Context, base tdCounters, want uint64, timeout time.Duration) error
	dir() string
	close() error
}

func openTeardownTarget(ctx context.Context, cfg Config, sp teardownSpec) (tdTarget, error) {
	switch cfg.Target.Kind {
	case loadgen.TargetSim:
		return newSimTD(cfg, sp)
	case loadgen.TargetPath:
		return newMountTD(cfg.Target.Dir, nil)
	}
	sc := *cfg.Server
	sc.Lock, sc.Args = sp.lock, slices.Clone(sc.Args)
	if loadgen.LockTraits(sp.lock).GracePeriods {
		sc.Args = append(sc.Args, graceArgs(sp.gp, cfg.Grace)...)
	}
	srv, err := loadgen.StartServer(ctx, sc)
	if err != nil {
		return nil, err
	}
	t, err := newMountTD(srv.Mountpoint(), srv)
	if err != nil {
		return nil, errors.Join(err, srv.Close())
	}
	return t, nil
}

// graceArgs are the server flags for policy gp and engine g.
func graceArgs(gp string, g locking.GraceConfig) []string {
	args := []string{"--gp=" + gp}
	if g.Tick > 0 {
		args = append(args, "--gp-tick="+g.Tick.String())
	}
	if g.ExpediteCost > 0 {
		args = append(args, "--expedite-cost="+g.ExpediteCost.String())
	}
	if g.ExpeditedIsNormal {
		args = append(args, "--rcu-normal")
	}
	return args
}

// simTD is a tree in process, built as `kernfsim mount` builds one (the
// synthetic sysfs plus the ABI), under the spec's lock and policy.
type simTD struct {
	t    *kernfsim.Tree
	abi  *sysfs.ABI
	w    *kernfsim.Walker
	cred kernfsim.Cred
}

func newSimTD(cfg Config, sp teardownSpec) (*simTD, error) {
	gp := kernfsim.GPNormal
	if sp.gp != GPNotApplicable {
		gp = kernfsim.GPPolicy(sp.gp)
	}
	a, err := sysfs.Assemble(sysfs.Options{Lock: sp.lock, Grace: cfg.Grace, GP: gp, Synth: cfg.Target.Tree.WithDefaults(),
		ABI: true, MaxDevices: max(cfg.Count, sysfs.DefaultMaxDevices)})
	if err != nil {
		return nil, loadgen.AssembleError(err)
	}
	return &simTD{t: a.Tree, abi: a.ABI, w: kernfsim.NewWalker(a.Tree, kernfsim.WalkerOptions{}), cred: loadgen.DefaultSimCred}, nil
}

func (s *simTD) create(name string, attrs int) error { return s.abi.Create(name, attrs) }
func (s *simTD) remove(names []string) error {
	return s.abi.Delete(context.Background(), names...)
}

func (s *simTD) read(name string, buf []byte) error {
	_, err := s.w.ReadFile(s.cred, client.DevicesDir+"/"+name+"/"+tdReadFile, buf)
	return err
}

func (s *simTD) counters() (tdCounters, error) {
	td, g := s.t.Teardowns(), s.t.Strategy().Stats().Grace
	return tdCounters{lock: s.t.Strategy().Name(), Counts: Counts{Queued: td.Queued,
		Completed: td.Completed, GracePeriods: g.GracePeriods, Expedited: g.Expedited}}, nil
}

// awaitComplete is the tree's barrier: it returns when every queued
// teardown has run.
func (s *simTD) awaitComplete(context.Context, tdCounters, uint64, time.Duration) error {
	s.t.Barrier()
	return nil
}

func (s *simTD) dir() string { return "" }

func (s *simTD) close() error {
	s.t.Barrier()
	return nil
}

// mountTD is a kernfsim mount: new_device and delete_device stay open for
// the whole storm, one write(2) per call.
type mountTD struct {
	d        *loadgen.Dir
	srv      *loadgen.Server // nil for a mount loadgen did not start
	add, del int             // file descriptors of new_device and delete_device
}

func newMountTD(dir string, srv *loadgen.Server) (*mountTD, error) {
	d, err := loadgen.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	m := &mountTD{d: d, srv: srv, add: -1, del: -1}
	for _, f := range []struct {
		fd  *int
		rel string
	}{{&m.add, client.NewDevicePath}, {&m.del, client.DeleteDevicePath}} {
		path := d.Path(f.rel)
		if err := loadgen.Retry(func() (err error) { *f.fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0); return }); err != nil {
			m.closeFiles()
			return nil, loadgen.BadConfig("Dir", "give a kernfsim mount (kernfsim mount DIR)", "%s: %v: not a kernfsim mount", path, err)
		}
	}
	if err := m.removeLeftovers(); err != nil {
		m.closeFiles()
		return nil, err
	}
	return m, nil
}

// removeLeftovers deletes devices an earlier storm left on the mount and
// waits until their teardowns have run, so that they do not count in the
// storm's.
func (m *mountTD) removeLeftovers() (err error) {
	names, err := m.d.Names(client.DevicesDir)
	if err != nil {
		return err
	}
	var batch []string
	removed := false
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := m.remove(batch)
		batch, removed = batch[:0], true
		return err
	}
	defer func() {
		if removed && err == nil {
			err = m.awaitIdle(time.Minute)
		}
	}()
	for _, name := range names {
		if _, err := strconv.Atoi(strings.TrimPrefix(name, teardownPrefix)); err != nil || !strings.HasPrefix(name, teardownPrefix) {
			continue
		}
		if batch = append(batch, name); len(batch) == 100 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// awaitIdle waits until no deferred teardown is pending.
func (m *mountTD) awaitIdle(timeout time.Duration) error {
	for end := time.Now().Add(timeout); ; time.Sleep(tdPollEvery) {
		c, err := m.counters()
		switch {
		case err != nil:
			return err
		case c.pending == 0:
			return nil
		case time.Now().After(end):
			return fmt.Errorf("%d deferred teardowns still pending after %v", c.pending, timeout)
		}
	}
}

func (m *mountTD) write(fd int, data []byte) error {
	return loadgen.Retry(func() error { _, err := unix.Write(fd, data); return err })
}

func (m *mountTD) create(name string, attrs int) error {
	if err := m.write(m.add, client.NewDevice(name, attrs)); err != nil {
		return fmt.Errorf("new_device %s: %w", name, err)
	}
	return nil
}

func (m *mountTD) remove(names []string) error {
	if err := m.write(m.del, client.DeleteDevices(names...)); err != nil {
		return fmt.Errorf("delete_device %s: %w", names[0], err)
	}
	return nil
}

func (m *mountTD) read(name string, buf []byte) error {
	return m.d.ReadFile(m.d.Path(client.DevicesDir+"/"+name+"/"+tdReadFile), buf)
}

// counters reads and parses kernel/kernfsim/stats.
func (m *mountTD) counters() (tdCounters, error) {
	s, err := client.ReadStats(m.d.Path(""))
	if err != nil {
		return tdCounters{}, err
	}
	c := tdCounters{lock: s.Lock, pending: s.CallbacksPending}
	c.Queued, c.Completed, c.GracePeriods, c.Expedited = s.TeardownsQueued, s.TeardownsCompleted, s.GracePeriods, s.Expedited
	return c, nil
}

// awaitComplete polls the stats file every tdPollEvery.
func (m *mountTD) awaitComplete(ctx context.Context, base tdCounters, want uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := m.counters()
		switch {
		case err != nil:
			return err
		case c.Completed-base.Completed >= want:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d teardowns completed %v after the storm (see %s)",
				c.Completed-base.Completed, want, timeout, m.d.Path(tdStatsFile))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(tdPollEvery):
		}
	}
}

func (m *mountTD) dir() string { return m.d.Path("") }

func (m *mountTD) closeFiles() {
	for _, fd := range []int{m.add, m.del} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	m.add, m.del = -1, -1
}

// close closes the control files and stops a server loadgen started; on
// a mount it did not start, it removes what the storm left.
func (m *mountTD) close() error {
	var err error
	if m.srv == nil && m.del >= 0 {
		err = m.removeLeftovers()
	}
	m.closeFiles()
	if m.srv != nil {
		err = errors.Join(err, m.srv.Close())
	}
	return err
}

// tdStorm creates and removes one run's devices.
type tdStorm struct {
	t     tdTarget
	cfg   Config
	sp    teardownSpec
	names []string
	next  atomic.Int64 // devices handed to remove so far: readers pick from the rest
	done  atomic.Int64 // devices created or removed in the phase running (progress)
}

func newTDStorm(t tdTarget, cfg Config, sp teardownSpec) *tdStorm {
	names := make([]string, cfg.Count)
	for i := range names {
		names[i] = tdName(i)
	}
	return &tdStorm{t: t, cfg: cfg, sp: sp, names: names}
}

// progress calls Config.Progress every ProgressEvery until stop is
// called.
func (s *tdStorm) progress(phase string) (stop func()) {
	if s.cfg.Progress == nil {
		return func() {}
	}
	s.done.Store(0)
	t0, quit, over := time.Now(), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		tick := time.NewTicker(loadgen.ProgressEvery)
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
func (s *tdStorm) create(ctx context.Context) (time.Duration, error) {
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
func (s *tdStorm) storm(ctx context.Context, run *Storm) (time.Time, error) {
	defer s.progress("remove")()
	readers := s.startReaders()
	h := loadgen.NewHistogram()
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
		loadgen.RecordLatency(h, now-prev)
		prev = now
		run.Calls++
		run.Removed += len(batch)
		s.done.Store(int64(run.Removed))
	}
	run.Total, run.Caller = prev, loadgen.Summarize(h)
	run.Reader = readers.stop()
	return t0, err
}

// tdReaders are the goroutines reading remaining devices during a storm,
// each locked to its thread; GOMAXPROCS is raised to their number plus
// two while they run (the remover and the tree's own goroutines), so that
// the kernel schedules them as threads.
type tdReaders struct {
	stopFlag atomic.Bool
	wg       sync.WaitGroup
	rs       []*tdReader // each owned by its goroutine until wg is done
	restore  func()
}

type tdReader struct {
	hist *hdrhistogram.Histogram
	errs loadgen.ErrorTally
}

func (s *tdStorm) startReaders() *tdReaders {
	n := s.cfg.Readers
	rd := &tdReaders{restore: func() {}}
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
		r := &tdReader{hist: loadgen.NewHistogram(), errs: loadgen.ErrorTally{}}
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
func (s *tdStorm) read(r *tdReader, seed int, stop *atomic.Bool) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x74656172646f776e))
	buf := make([]byte, loadgen.DefaultBufSize)
	for !stop.Load() {
		lo := int(s.next.Load())
		if lo >= len(s.names) {
			return
		}
		name := s.names[lo+rng.IntN(len(s.names)-lo)]
		t0 := time.Now()
		err := s.t.read(name, buf)
		loadgen.RecordLatency(r.hist, time.Since(t0))
		if err != nil {
			r.errs.Add(kernfsim.Errno(err), true, client.DevicesDir+"/"+name+"/"+tdReadFile, 1)
		}
	}
}

// stop stops the readers and merges what they saw; nil without readers.
func (rd *tdReaders) stop() *ReaderResult {
	if len(rd.rs) == 0 {
		return nil
	}
	rd.stopFlag.Store(true)
	rd.wg.Wait()
	rd.restore()
	all, tally := loadgen.NewHistogram(), loadgen.ErrorTally{}
	for _, r := range rd.rs {
		all.Merge(r.hist)
		tally.Merge(r.errs)
	}
	return &ReaderResult{Readers: len(rd.rs), Latency: loadgen.Summarize(all), Errors: tally.Sorted()}
}
