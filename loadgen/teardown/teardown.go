package teardown

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/series"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// Teardown defaults and limits.
const (
	// MaxSimDevices is the most devices a storm makes, about 6 million
	// nodes in process. docs/notes/2026-12-01-building-trees.md gives a
	// node's heap.
	MaxSimDevices = 1 << 20
	DefaultCount  = 5000 // the seed's 5000 mounts
	DefaultLock   = "rcu"
	// DefaultCompleteTimeout bounds the wait for teardowns on a mount.
	DefaultCompleteTimeout = 2 * time.Minute
	// GPNotApplicable is the gp of a run under a lock without grace
	// periods (mutex, rwsem: removal drains and tears down in the call).
	GPNotApplicable = "n/a"
	// devicePrefix names the devices a storm creates: lgtd0, lgtd1, ...
	devicePrefix = "lgtd"
	// teardownsPerDevice is what one device adds to tree.teardowns_*: its
	// directory and its class/kernfsim symlink (sysfs.ABI.Delete).
	teardownsPerDevice = 2
	statsFile          = client.StatsPath
	readAttr           = "uevent" // what readers read of a remaining device
	pollEvery          = time.Millisecond
)

// Config is a set of teardown storms, one per (lock, gp).
type Config struct {
	// Target: TargetSim (a tree per run, in process), TargetKernfsim
	// without Dir (a server per run, started with Server), or a Dir
	// (TargetPath or TargetKernfsim) that is a kernfsim mount already: one
	// run under the mount's own lock and policy, which the stats file
	// tells (the policy is inferred from the counters; see Storm).
	Target targets.Target
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
	Server *serverproc.ServerConfig
	// CompleteTimeout bounds the wait for teardowns on a mount; 0 means
	// DefaultCompleteTimeout.
	CompleteTimeout time.Duration
	// Progress, if not nil, is called about five times a second while a
	// storm creates or removes devices.
	Progress func(Progress)
	// Args is the command line, recorded in Result.Provenance.
	Args []string
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
	Provenance  provenance.Provenance // the build, the machine and the command line
	Target      targets.Target        // Dir set for a path target
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
	Caller latency.Latency
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
	Latency latency.Latency // one open/read/close of a remaining device's uevent
	// Errors: ENOENT and ENODEV are expected (the device picked was being
	// removed) and marked so (ErrorCount.Churn).
	Errors []errtally.ErrorCount
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

// spec is one storm's lock and policy.
type spec struct{ lock, gp string }

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
	if c.Target.Kind == targets.TargetKernfsim && c.Target.Dir != "" {
		c.Target.Kind = targets.TargetPath
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Count <= 0 || c.Batch <= 0 || c.Readers < 0:
		return setting.NewError("Count", "give a positive count and batch, and 0 or more readers",
			"count %d, batch %d, readers %d", c.Count, c.Batch, c.Readers)
	case c.Batch > c.Count:
		return setting.NewError("Batch", "give at most {Count}", "batch %d is more than the %d devices", c.Batch, c.Count)
	case c.Count > MaxSimDevices:
		return setting.NewError("Count", "give at most "+strconv.Itoa(MaxSimDevices), "%d devices would take more memory than a storm needs", c.Count)
	case c.Attrs < 0 || c.Attrs > sysfs.MaxDeviceAttrs:
		return setting.NewError("Attrs", "give 0 to "+strconv.Itoa(sysfs.MaxDeviceAttrs), "%d attributes per device", c.Attrs)
	case c.Target.Kind != targets.TargetSim && c.Count > sysfs.DefaultMaxDevices:
		return setting.NewError("Count", "give at most "+strconv.Itoa(sysfs.DefaultMaxDevices)+" on a mount, or use {TargetSim}",
			"a kernfsim server makes at most %d devices", sysfs.DefaultMaxDevices)
	case c.Target.Kind != targets.TargetSim && c.Batch*(len(deviceName(c.Count-1))+1) > kernfsim.PageSize:
		return setting.NewError("Batch", fmt.Sprintf("give at most %d on a mount, or use {TargetSim} (no page limit in process)",
			kernfsim.PageSize/(len(deviceName(c.Count-1))+1)), "%d names do not fit one %d-byte write to delete_device",
			c.Batch, kernfsim.PageSize)
	}
	if err := limits.CheckThreads("Readers", c.Readers); err != nil {
		return err
	}
	for _, l := range c.Locks {
		if !targets.AcceptsWriters(l) {
			return setting.NewError("Lock", "use "+targets.WriterLocksText(), "lock %q cannot remove devices", l)
		}
	}
	switch c.Target.Kind {
	case targets.TargetSim:
		if err := c.Target.Tree.WithDefaults().Validate(); err != nil {
			return &setting.Error{Field: "Tree", Problem: err.Error()}
		}
	case targets.TargetKernfsim:
		if c.Server == nil || len(c.Server.Command) == 0 {
			return serverproc.ErrNoServer
		}
	case targets.TargetPath:
		if c.Target.Dir == "" {
			return setting.NewError("Dir", "name a kernfsim mount", "a path target needs a directory")
		}
	default:
		return setting.NewError("Target", "use sim, kernfsim or a path", "unknown target kind %q", c.Target.Kind)
	}
	return nil
}

// specs are the storms to run, in order: per lock, per policy under rcu.
func (c Config) specs() []spec {
	if c.Target.Kind == targets.TargetPath {
		return []spec{{}}
	}
	var out []spec
	for _, l := range c.Locks {
		if !targets.GracePeriods(l) {
			out = append(out, spec{l, GPNotApplicable})
			continue
		}
		for _, gp := range c.GPs {
			out = append(out, spec{l, string(gp)})
		}
	}
	return out
}

// deviceName is device i's name.
func deviceName(i int) string { return devicePrefix + strconv.Itoa(i) }

// Run runs a storm per (lock, gp) and returns them all. A
// *ConfigError means bad input. When ctx is cancelled it stops the storm
// in progress and returns what was measured, with Interrupted set and
// ctx's error; servers it started are stopped (each runs a barrier before
// it unmounts, so no queued teardown is lost).
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	res := Result{Provenance: provenance.CaptureProvenance(cfg.Args), Target: cfg.Target, Count: cfg.Count, Batch: cfg.Batch, Readers: cfg.Readers,
		Attrs: cfg.Attrs, Grace: cfg.Grace, CPUs: len(limits.AllowedCPUs())}
	if err := cfg.validate(); err != nil {
		return res, err
	}
	var err error
	res.Interrupted, err = series.RunEach(ctx, cfg.specs(), func(sp spec) (Storm, error) { return runStorm(ctx, cfg, sp) },
		func(run Storm, _ error) {
			if run.Calls > 0 {
				res.Runs = append(res.Runs, run)
			}
		})
	return res, err
}

// runStorm sets up a target, creates the devices, runs the storm and
// waits for its teardowns.
func runStorm(ctx context.Context, cfg Config, sp spec) (run Storm, err error) {
	t, err := openTarget(ctx, cfg, sp)
	if err != nil {
		return run, err
	}
	defer func() { err = errors.Join(err, t.close()) }()
	run = Storm{Lock: sp.lock, GP: sp.gp, Dir: t.dir(), Count: cfg.Count}
	s := newStormer(t, cfg, sp)
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
	case !targets.GracePeriods(lock):
		return GPNotApplicable
	case c.Queued > 0:
		return string(kernfsim.GPDeferred)
	case c.Expedited > 0:
		return string(kernfsim.GPExpedited)
	}
	return string(kernfsim.GPNormal)
}
