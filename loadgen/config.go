package loadgen

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
)

// Defaults.
const (
	DefaultTimes       = 10000 // per worker, as Ian Kent's runs
	DefaultHwlocTimes  = 20    // OpHwloc and OpLstopo: one operation is a whole discovery
	DefaultMissingPath = "devices/system/cpu/does_not_exist"
	// DefaultChurnAttrs is how many attrN files a churned device gets.
	DefaultChurnAttrs = 2
)

// OpColdplug's defaults.
const (
	// DefaultColdplugTimes is operations per worker: one is five lookups.
	DefaultColdplugTimes = 1000
	// DefaultColdplugRate is the memory blocks the writer adds per second
	// when Config.Churn is 0.
	DefaultColdplugRate = 1000
)

// OpCgroup's defaults.
const (
	// DefaultCgroupTimes is operations per worker: one is five reads.
	DefaultCgroupTimes = 1000
	// DefaultCgroups is the containers of the hierarchy loadgen builds
	// for OpCgroup when the tree is not sized (sysfs.SynthConfig.Cgroups):
	// 64 containers in 32 pods, 99 cgroups, a busy node's (kubelet's
	// default limit is 110 pods).
	DefaultCgroups = 64
	// DefaultCgroupRate is the cgroups the writer makes or removes per
	// second when Config.Churn is 0: DefaultWriteRate, 50 container starts
	// and 50 stops a second, a node's churn at its busiest (a CI node's,
	// or a deployment rolling over it).
	DefaultCgroupRate = DefaultWriteRate
)

// Writers' defaults and limits (Config.Writers).
const (
	// DefaultWriteRate is each writer's changes per second when
	// Config.Writers is given without Config.Churn (and
	// CompareConfig.WriteRate's default): one every 10 ms. That is 20 changes a writer in a
	// compare phase of DefaultCompareMinDuration, enough for a median
	// and a rough p99, and slower than one grace period at the default
	// tick (locking.GraceConfig.Tick), so that a writer which waits one per
	// change (rcu's removal, a percpu-rwsem writer) still keeps up and its
	// latency, not a backlog, is what the cell shows. It is also a node's
	// container churn at its busiest (a pod start makes and removes a few
	// cgroups).
	DefaultWriteRate = 100
	// MaxWriters bounds Config.Writers: a writer a CPU of a large machine.
	MaxWriters = 256
)

// Config is one run.
type Config struct {
	Target targets.Target
	Op     workload.Op // "" means OpOpenReadClose
	// Missing makes every worker look up MissingPath, which must not
	// exist: the failing open (or stat) is the operation.
	Missing     bool
	MissingPath string // "" means DefaultMissingPath
	Threads     int    // 0 means every CPU this process may run on
	Times       int    // per worker; 0 means DefaultTimes (or the op's: DefaultHwlocTimes, DefaultColdplugTimes, DefaultCgroupTimes)
	// Files is K, the number of distinct files (worker i uses file i mod
	// K); 0 means max(1, Threads/2), or len(FileList) when that is given.
	Files int
	// FileList names the files, relative to the target (or absolute under
	// a path target); empty means chosen automatically: cpuN/topology/core_id
	// first, then the other topology files, then cache files.
	FileList []string
	BufSize  int  // bytes per read; 0 means workload.DefaultBufSize
	NoPin    bool // do not pin the concur phase's worker i to CPU i mod ncpus (the seed pins them)
	// PinSingle pins the single phase's worker to the first CPU this
	// process may run on. By default it runs unpinned, as the seed's
	// (Fox Chen's program pins only its concurrent threads): over FUSE
	// that matters, since a pinned client keeps its requests on one
	// CPU's queue of an io_uring server while an unpinned one migrates.
	// The two combine freely: neither set pins the concur workers only
	// (the seed); PinSingle pins both phases; NoPin pins nothing; NoPin
	// with PinSingle pins the single worker only.
	PinSingle bool
	// MinDuration is how long each phase lasts at least, from its start
	// barrier: a worker that has done its Times operations goes on until
	// then, so a phase of cheap operations still spans many scheduler
	// ticks. 0 means Times alone decide (the seed's rule). Worker
	// processes (Procs) count from when each sees the barrier. Each
	// WorkerResult's Ops says what the worker did.
	MinDuration time.Duration
	// Procs runs each worker as a separate process, started with
	// WorkerCommand (which must run ServeWorker). Not with TargetSim.
	Procs         bool
	WorkerCommand []string
	// Server starts the kernfsim server for a TargetKernfsim without Dir.
	Server *serverproc.ServerConfig
	// Churn is each writer's changes per second during the run: devices
	// added or removed through bus/kernfsim/new_device and delete_device
	// (the workers then read a churned device's file every fourth
	// iteration, unless NoChurnReads); 0 means none, or DefaultWriteRate
	// with Writers. Under OpColdplug it is the memory blocks hot-added per
	// second instead, under OpCgroup the containers' cgroups made or
	// removed; 0 there means the op's default rate (DefaultColdplugRate,
	// DefaultCgroupRate) where the target can be written, else none.
	Churn float64
	// Writers is how many writers make changes at once, each on its own
	// goroutine at Churn a second, each timing its own changes
	// (Result.Churn.Latency, Phase.Writes); 0 means one where there is a
	// rate (Churn, or the op's default), else none.
	Writers int
	// NoChurnReads keeps the workers to their operation while devices
	// churn, instead of reading a churned device's file every fourth
	// iteration: compare's writers change the tree beside readers whose
	// op is the cell's.
	NoChurnReads bool
	// Progress, if not nil, is called about five times a second from
	// another goroutine while a phase runs.
	Progress func(Progress)
	// Args is the command line that asked for the run, recorded in
	// Result.Provenance.
	Args []string
	// FieldNames is how the caller names Config's fields, for the text a
	// result shows (Result.Warnings); nil names each by itself.
	FieldNames setting.Names
	// SimCalibration, if not nil, is how Target.SimCost was chosen
	// (CalibrateSimCost), for the reports.
	SimCalibration *SimCalibration
}

// Progress is where a run stands.
type Progress struct {
	Phase   string // "single" or "concur"
	Done    int64  // operations finished in this phase (0 with Procs)
	Total   int64  // operations in this phase (at least, with a MinDuration)
	Elapsed time.Duration
	// MinDuration is how long the phase lasts at least
	// (Config.MinDuration): past Total, Elapsed against it says how far
	// the phase is.
	MinDuration time.Duration
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Op == "" {
		c.Op = workload.OpOpenReadClose
	}
	if c.MissingPath == "" {
		c.MissingPath = DefaultMissingPath
	}
	if c.Threads == 0 {
		c.Threads = runtime.NumCPU()
	}
	if c.Times == 0 {
		c.Times = defaultTimes(c.Op)
	}
	if c.Files == 0 {
		c.Files = max(1, c.Threads/2)
		if len(c.FileList) > 0 {
			c.Files = len(c.FileList)
		}
	}
	if c.BufSize == 0 {
		c.BufSize = workload.DefaultBufSize
	}
	if c.Target.Lock == "" && c.Target.Kind != targets.TargetPath {
		c.Target.Lock = serverproc.DefaultLock
	}
	if c.Op == workload.OpCgroup && c.Target.Kind == targets.TargetSim && c.Target.Build == nil && c.Target.Tree.Cgroups == 0 {
		c.Target.Tree.Cgroups = DefaultCgroups
	}
	return c
}

// writeRate is each writer's changes per second: Churn, the op's default
// (coldplug's, cgroup's), or DefaultWriteRate where only Writers is given;
// 0: no writers.
func (c Config) writeRate() float64 {
	switch {
	case c.Churn > 0:
		return c.Churn
	case c.Op == workload.OpColdplug:
		return DefaultColdplugRate
	case c.Op == workload.OpCgroup:
		return DefaultCgroupRate
	case c.Writers > 0:
		return DefaultWriteRate
	}
	return 0
}

// writers is how many writers run where there is a rate.
func (c Config) writers() int { return max(1, c.Writers) }

// writersField is the field that asked for writers: Churn, or Writers
// alone.
func (c Config) writersField() string {
	if c.Churn == 0 {
		return "Writers"
	}
	return "Churn"
}

// explicitWriters reports whether writers were asked for (a rate or a
// count): where they cannot write, that is bad input, not a note.
func (c Config) explicitWriters() bool { return c.Churn > 0 || c.Writers > 0 }

// validate checks what can be checked without touching the target.
func (c Config) validate() error {
	pos := func(field string, v int) error {
		if v <= 0 {
			return setting.NewError(field, "give a positive number", "%d is not positive", v)
		}
		return nil
	}
	if c.MinDuration < 0 {
		return setting.NewError("MinDuration", "give 0 (Times alone) or more", "%v is negative", c.MinDuration)
	}
	for _, err := range []error{pos("Threads", c.Threads), pos("Times", c.Times),
		pos("Files", c.Files), pos("BufSize", c.BufSize), c.validateOp(), c.validateTarget(),
		c.validateProcs(), c.validateChurn(), limits.CheckThreads("Threads", c.Threads), checkBuffers(c.Threads, c.BufSize)} {
		if err != nil {
			return err
		}
	}
	if err := c.validateFileList(); err != nil {
		return err
	}
	if len(c.FileList) > 0 && c.Files > len(c.FileList) {
		return setting.NewError("Files", "give at most as many as the files listed",
			"%d distinct files asked for, but only %d listed", c.Files, len(c.FileList))
	}
	return nil
}

// validateFileList refuses a listed file outside the target: an absolute
// path not under Dir, or a relative one climbing out with "..". The check
// is on the names (symlinks inside the target, as sysfs has, stay
// usable).
func (c Config) validateFileList() error {
	dir := c.Target.Dir
	if dir == "" {
		dir = "/" // an in-process tree: a path resolves within it anyway
	}
	for _, f := range c.FileList {
		inside := !filepath.IsAbs(f) && filepath.IsLocal(f)
		if filepath.IsAbs(f) {
			rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(f))
			inside = err == nil && filepath.IsLocal(rel)
		}
		if !inside && f != "" {
			return setting.NewError("FileList", "name files inside the target, relative to it or absolute under "+dir,
				"%s is outside %s", f, dir)
		}
	}
	return nil
}

func (c Config) validateOp() error {
	if !slices.Contains(workload.Ops, c.Op) {
		return setting.NewError("Op", "valid operations are "+workload.OpNames(), "unknown operation %q", c.Op)
	}
	if c.Missing && c.Op != workload.OpOpenReadClose && c.Op != workload.OpStat && c.Op != workload.OpSameFile {
		return setting.NewError("Missing", "use it with open-read-close or stat",
			"a missing path cannot be the object of %s", c.Op)
	}
	if c.Op == workload.OpLstopo && c.Target.Kind == targets.TargetSim {
		return setting.NewError("Op", "measure a mount ({Dir} DIR or the default target)",
			"lstopo reads a filesystem, and a sim target has none")
	}
	return nil
}

// defaultTimes is the operations per worker of o when Config.Times is 0.
func defaultTimes(o workload.Op) int {
	switch o {
	case workload.OpHwloc, workload.OpLstopo:
		return DefaultHwlocTimes
	case workload.OpColdplug:
		return DefaultColdplugTimes
	case workload.OpCgroup:
		return DefaultCgroupTimes
	}
	return DefaultTimes
}

func (c Config) validateTarget() error {
	t := c.Target
	switch t.Kind {
	case targets.TargetSim, targets.TargetKernfsim:
		if !slices.Contains(locking.Names, t.Lock) {
			return setting.NewError("Lock", "valid strategies are "+strings.Join(locking.Names, ", "),
				"unknown lock strategy %q", t.Lock)
		}
	case targets.TargetPath:
		if t.Dir == "" {
			return setting.NewError("Dir", "name the directory to measure", "a path target needs a directory")
		}
	default:
		return setting.NewError("Target", "use sim, path or kernfsim", "unknown target kind %q", t.Kind)
	}
	switch {
	case t.SimCost < 0:
		return setting.NewError("SimCost", "give 0 (the bare sim) or more", "%v is negative", t.SimCost)
	case t.SimCost > time.Second:
		return setting.NewError("SimCost", "give the kernel's work per operation: microseconds", "%v per operation is more than a system call costs", t.SimCost)
	case t.SimCost > 0 && t.Kind != targets.TargetSim:
		return setting.NewError("SimCost", "drop it, or measure the sim", "work outside the lock is added to sim operations only; a %s target does its own", t.Kind)
	case t.SimShared && t.Kind != targets.TargetSim:
		return setting.NewError("SimShared", "drop it, or measure the sim", "the kernel's shared writes are modelled by the sim only; a %s target makes the kernel's own", t.Kind)
	}
	if t.Kind == targets.TargetSim && t.Build == nil {
		if err := t.Tree.WithDefaults().Validate(); err != nil {
			return &setting.Error{Field: "Tree", Problem: err.Error()}
		}
	}
	return nil
}

func (c Config) validateProcs() error {
	switch {
	case !c.Procs:
		return nil
	case c.Target.Kind == targets.TargetSim:
		return setting.NewError("Procs", "drop {Procs}, or measure a mount ({Dir} DIR or the default target)",
			"worker processes cannot share the in-process tree of a sim target")
	case len(c.WorkerCommand) == 0:
		return setting.NewError("WorkerCommand", "set it to a command that runs ServeWorker", "Procs needs a worker command")
	}
	return nil
}

func (c Config) validateChurn() error {
	switch {
	case c.Churn < 0:
		return setting.NewError("Churn", "give a rate of 0 or more per second", "%g is negative", c.Churn)
	case c.Writers < 0 || c.Writers > MaxWriters:
		return setting.NewError("Writers", fmt.Sprintf("give 0 to %d writers", MaxWriters), "%d writers", c.Writers)
	case c.explicitWriters() && c.Target.Kind != targets.TargetPath && !targets.AcceptsWriters(c.Target.Lock):
		return setting.NewError(c.writersField(), "use "+targets.WriterLocksText(), "lock strategy %s refuses writers, so nothing can churn", c.Target.Lock)
	case c.Churn > 100000:
		return setting.NewError("Churn", "give at most 100000 per second", "%g per second is more than a writer can do", c.Churn)
	}
	return nil
}
