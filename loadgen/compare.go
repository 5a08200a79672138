package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/limits"
	"github.com/kernfsim/kernfsim/loadgen/provenance"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// Compare defaults: a plain compare finishes within 2 minutes on 2 cores.
// Its length is cells x repeats x 2 phases x DefaultCompareMinDuration,
// plus the cells whose count of operations outlasts that, the rows'
// warm-ups and each run's set-up. scripts/measure/readme.sh runs a plain
// compare, whose table's header says how long it took.
const (
	// DefaultCompareTimes is operations per worker in each phase, at
	// least: a floor under DefaultCompareMinDuration, which decides the
	// length of most cells.
	DefaultCompareTimes   = 200
	DefaultCompareRepeats = 3
	// DefaultCompareHwlocTimes is discoveries per worker in hwloc and
	// lstopo cells: one, as an MPI rank does at start-up.
	DefaultCompareHwlocTimes = 1
	// DefaultCompareMinDuration is how long each phase of a run lasts at
	// least (Config.MinDuration): 50 scheduler ticks at HZ=250, thousands
	// of operations of a FUSE cell.
	DefaultCompareMinDuration = 200 * time.Millisecond
	// DefaultCompareWarmUp is how long each row is warmed up, untimed,
	// before the first repeat (CompareConfig.WarmUp).
	DefaultCompareWarmUp = 50 * time.Millisecond
)

// DefaultCompareOps are the seed's two benchmarks.
var DefaultCompareOps = []string{"files", "missing"}

// DefaultCompareThreads is 1, ncpus, 4 x ncpus and 48 (the seed's largest
// machine), without repeats, in increasing order.
func DefaultCompareThreads() []int {
	n := runtime.NumCPU()
	t := []int{1, n, 4 * n, 48}
	slices.Sort(t)
	return slices.Compact(t)
}

// Row is one line of a comparison: a target under a lock. Kernfsim rows
// without a Dir get a server Compare starts (CompareConfig.Server).
type Row struct {
	Target targets.Target
}

// Label is the row's name in tables and plots: "sim rwsem", "sys".
func (r Row) Label() string {
	if r.Target.Kind == targets.TargetPath {
		return r.Target.Label()
	}
	return r.Target.Label() + " " + r.Target.Lock
}

// CompareConfig is a grid of runs: every row x op x thread count,
// repeated.
type CompareConfig struct {
	Rows    []Row
	Ops     []string // op labels: files, missing, or an Op name (stat, readdir, ...)
	Threads []int
	Times   int // per worker; 0 means DefaultCompareTimes
	// SimTimes is Times for sim rows, whose operations cost far less
	// than a FUSE one (the readme.sh table in docs/performance.md).
	// 0 means 20 x Times.
	SimTimes int
	// SysTimes is Times for the path (sys) rows' plain ops. They cost far
	// less than a FUSE one (same table). At Times, each worker's loop
	// would end within a scheduler tick. 0 means 10 x Times.
	SysTimes int
	// HwlocTimes is Times for hwloc and lstopo cells, whose operation is a
	// whole discovery (sim rows: SimTimes/Times times that); 0 means
	// DefaultCompareHwlocTimes.
	HwlocTimes int
	Repeats    int // 0 means DefaultCompareRepeats
	// NoPin and PinSingle are Config's: by default the concur workers
	// are pinned and the single worker is not, as the seed's.
	NoPin, PinSingle bool
	// MinDuration is how long each phase of a run lasts at least, past
	// its Times if need be (Config.MinDuration); 0 means
	// DefaultCompareMinDuration, a negative value none (Times alone
	// decide). Not in hwloc and lstopo cells, whose figure is the time to
	// done of their HwlocTimes discoveries.
	MinDuration time.Duration
	// WarmUp is how long each row runs untimed before the first repeat
	// (one thread, open-read-close, for WarmUp a phase), so that no cell's
	// first run is its server's or this process's first; 0 means
	// DefaultCompareWarmUp, a negative value none.
	WarmUp time.Duration
	// Server starts the servers of kernfsim rows without a Dir.
	Server *serverproc.ServerConfig
	// Writers is how many writers change the tree beside every cell's
	// readers (Config.Writers), each making WriteRate changes a second and
	// timing them: devices through bus/kernfsim/new_device and
	// delete_device, in cgroup cells containers' cgroups through
	// new_cgroup and delete_cgroup, in coldplug cells memory blocks
	// through the probe. 0 runs none (coldplug and cgroup cells keep their
	// one writer at the op's default rate). A row that cannot be written
	// (sys; a lock that refuses writers) runs readers only, with a note.
	Writers int
	// WriteRate is each writer's changes per second; 0 means
	// DefaultWriteRate.
	WriteRate float64
	// SimCost is the sim rows' work outside the lock per operation
	// (Target.SimCost) when Calibrate is "".
	SimCost time.Duration
	// Calibrate, if not "", is a directory (/sys) against which Compare
	// first calibrates each op's SimCost for the sim rows
	// (CalibrateSimCost, bare sim under DefaultLock); ops that cannot be
	// calibrated stay bare, with a note.
	Calibrate string
	// Progress, if not nil, is called before each run.
	Progress func(CompareProgress)
	// Args is the command line, recorded in CompareResult.Provenance.
	Args []string
	// FieldNames is how the caller names the fields of CompareConfig and
	// Config, for the text a result shows (warnings); nil names each by
	// itself.
	FieldNames setting.Names
}

// CompareProgress is where a comparison stands.
type CompareProgress struct {
	Done, Total int
	Elapsed     time.Duration
	Next        string // the run about to start
}

// CompareResult is a comparison's measurements.
type CompareResult struct {
	Provenance  provenance.Provenance
	Ops         []string
	Threads     []int
	Times       int
	SimTimes    int
	SysTimes    int
	HwlocTimes  int
	Repeats     int
	CPUs        int
	Pinned      bool   // the concur workers were pinned
	Rows        []Row  // Dir filled in for kernfsim rows Compare mounted
	Cells       []Cell // row-major: for each row, op, thread count
	Elapsed     time.Duration
	Interrupted bool
	// SinglePinned says the single phase's worker was pinned
	// (CompareConfig.PinSingle).
	SinglePinned bool
	// MinDuration is how long each phase of a run lasted at least; 0:
	// Times alone decided. WarmUp is how long each row was warmed up;
	// 0: not at all.
	MinDuration, WarmUp time.Duration
	// Notes say what runs left out, once per row and note ("sys rwsem:
	// no memory hot-add: ..."), and which cells were skipped.
	Notes []string
	// SimCosts is the sim rows' work outside the lock per op label; an op
	// not in it is bare. SimCalibrations says how each was calibrated
	// (CompareConfig.Calibrate).
	SimCosts        map[string]time.Duration
	SimCalibrations []SimCalibration
	// Writers and WriteRate are CompareConfig's: the writers beside each
	// cell's readers, and each one's changes per second; 0 and 0 without.
	Writers   int
	WriteRate float64
	// FieldNames is CompareConfig.FieldNames, which the warnings of its
	// runs and reports name fields with.
	FieldNames setting.Names
	// LineTransfer is the cache-line transfer time measured before the
	// runs (LineTransfer), which Binding prices shared read sides at; 0:
	// not measured.
	LineTransfer time.Duration
}

// SimMode says what the sim rows' operations do besides the tree's own
// code: "bare", "calibrated" (against a real directory) or "fixed".
func (r *CompareResult) SimMode() string {
	switch {
	case len(r.SimCalibrations) > 0:
		return "calibrated"
	case len(r.SimCosts) > 0:
		return "fixed"
	}
	return "bare"
}

// CellTarget is c's target as its runs had it: a sim row's with the op's
// SimCost, and the kernel's shared writes wherever the op has a cost,
// fixed or calibrated, even one of 0.
func (r CompareResult) CellTarget(c Cell) targets.Target {
	t := c.Row.Target
	if t.Kind == targets.TargetSim {
		cost, ok := r.SimCosts[c.Op]
		t.SimCost, t.SimShared = cost, ok
	}
	return t
}

// TimeToDoneOp reports whether the op label names an operation whose
// figure is the time to done, not the per-op.
func TimeToDoneOp(label string) bool {
	return label == string(workload.OpHwloc) || label == string(workload.OpLstopo)
}

func (c CompareConfig) withDefaults() CompareConfig {
	if c.Times == 0 {
		c.Times = DefaultCompareTimes
	}
	if c.Repeats == 0 {
		c.Repeats = DefaultCompareRepeats
	}
	if c.SimTimes == 0 {
		c.SimTimes = 20 * c.Times
	}
	if c.SysTimes == 0 {
		c.SysTimes = 10 * c.Times
	}
	if c.HwlocTimes == 0 {
		c.HwlocTimes = DefaultCompareHwlocTimes
	}
	if c.WriteRate == 0 && c.Writers > 0 {
		c.WriteRate = DefaultWriteRate
	}
	c.MinDuration = orDefault(c.MinDuration, DefaultCompareMinDuration)
	c.WarmUp = orDefault(c.WarmUp, DefaultCompareWarmUp)
	if len(c.Ops) == 0 {
		c.Ops = DefaultCompareOps
	}
	if len(c.Threads) == 0 {
		c.Threads = DefaultCompareThreads()
	}
	return c
}

func (c CompareConfig) validate() error {
	switch {
	case len(c.Rows) == 0:
		return setting.NewError("Rows", "name at least one target", "nothing to compare")
	case c.SimCost < 0 || c.SimCost > time.Second:
		return setting.NewError("SimCost", "give the kernel's work per operation, 0 to a few microseconds", "%v", c.SimCost)
	case c.Times <= 0 || c.SimTimes <= 0 || c.SysTimes <= 0 || c.HwlocTimes <= 0 || c.Repeats <= 0:
		return setting.NewError("Times", "give positive numbers", "times %d, sim times %d, hwloc times %d, repeats %d",
			c.Times, c.SimTimes, c.HwlocTimes, c.Repeats)
	case c.Writers < 0 || c.Writers > MaxWriters:
		return setting.NewError("Writers", fmt.Sprintf("give 0 to %d writers", MaxWriters), "%d writers", c.Writers)
	case c.WriteRate < 0 || c.WriteRate > 100000:
		return setting.NewError("WriteRate", "give 0 (the default) to 100000 changes per second", "%g per second", c.WriteRate)
	}
	for _, t := range c.Threads {
		if t <= 0 {
			return setting.NewError("Threads", "give positive numbers", "%d threads", t)
		}
		if err := limits.CheckThreads("Threads", t); err != nil {
			return err
		}
	}
	for _, op := range c.Ops {
		if _, _, ok := ParseOpLabel(op); !ok {
			return setting.NewError("Ops", "use files, missing, stat-missing or an operation name ("+workload.OpNames()+")", "unknown op %q", op)
		}
	}
	return nil
}

// ParseOpLabel is OpLabel's inverse: the op, whether it looks up a
// missing path, and whether s names one.
func ParseOpLabel(s string) (workload.Op, bool, bool) {
	switch s {
	case "files":
		return workload.OpOpenReadClose, false, true
	case "missing":
		return workload.OpOpenReadClose, true, true
	case "stat-missing":
		return workload.OpStat, true, true
	}
	return workload.Op(s), false, slices.Contains(workload.Ops, workload.Op(s))
}

// Compare runs every row x op x thread count Repeats times, interleaved
// so that drift in the machine hits every row alike: repeat by repeat,
// thread count by thread count, op by op, row by row in RowOrder (A B C,
// C B A, B C A, ...). It starts the servers kernfsim rows need first,
// warms every row up (WarmUp), and stops the servers at the end.
// When ctx is cancelled it returns what was measured, Interrupted set,
// and ctx's error.
func Compare(ctx context.Context, cc CompareConfig) (res CompareResult, err error) {
	cc = cc.withDefaults()
	if err := cc.validate(); err != nil {
		return CompareResult{}, err
	}
	res = CompareResult{Provenance: provenance.CaptureProvenance(cc.Args), Ops: cc.Ops, Threads: cc.Threads, Times: cc.Times, SimTimes: cc.SimTimes, SysTimes: cc.SysTimes,
		HwlocTimes: cc.HwlocTimes, Repeats: cc.Repeats, CPUs: len(limits.AllowedCPUs()), Pinned: !cc.NoPin, SinglePinned: cc.PinSingle,
		MinDuration: cc.MinDuration, WarmUp: cc.WarmUp, Rows: slices.Clone(cc.Rows), Writers: cc.Writers, WriteRate: cc.WriteRate,
		FieldNames: cc.FieldNames}
	stop, err := startServers(ctx, res.Rows, cc.Server)
	defer func() { err = errors.Join(err, stop()) }()
	if err != nil {
		return res, err
	}
	if err := simCosts(ctx, cc, &res); err != nil {
		return res, err
	}
	res.Cells = NewCells(res)
	res.LineTransfer = LineTransfer()
	t0 := time.Now()
	err = runGrid(ctx, cc, &res, t0)
	res.Elapsed = time.Since(t0)
	if ctx.Err() != nil {
		res.Interrupted = true
	}
	return res, err
}

// simCosts fills in the sim rows' work outside the lock: calibrated per
// op against cc.Calibrate, or cc.SimCost for every op. Without sim rows
// there is nothing to do.
func simCosts(ctx context.Context, cc CompareConfig, res *CompareResult) error {
	i := slices.IndexFunc(res.Rows, func(r Row) bool { return r.Target.Kind == targets.TargetSim })
	if i < 0 {
		return nil
	}
	if cc.Calibrate == "" {
		if cc.SimCost > 0 {
			res.SimCosts = map[string]time.Duration{}
			for _, op := range res.Ops {
				res.SimCosts[op] = cc.SimCost
			}
		}
		return nil
	}
	res.SimCosts = map[string]time.Duration{}
	for _, label := range res.Ops {
		op, missing, _ := ParseOpLabel(label)
		if !calibratable(op) {
			res.note("sim rows: " + label + " stays bare: it makes many system calls per operation, " +
				"so its cost cannot be calibrated per operation")
			continue
		}
		c := Config{Target: res.Rows[i].Target, Op: op, Missing: missing, NoPin: cc.NoPin, PinSingle: cc.PinSingle}
		cal, err := CalibrateSimCost(ctx, c, cc.Calibrate, serverproc.DefaultLock)
		if err != nil {
			return err
		}
		res.SimCosts[label] = cal.Cost
		res.SimCalibrations = append(res.SimCalibrations, cal)
	}
	return nil
}

// NewCells are the grid of res's rows, ops and thread counts, row-major
// (as CompareResult.Cells), without runs.
func NewCells(res CompareResult) []Cell {
	var cells []Cell
	for _, row := range res.Rows {
		for _, op := range res.Ops {
			for _, th := range res.Threads {
				cells = append(cells, Cell{Row: row, Op: op, Threads: th})
			}
		}
	}
	return cells
}

// note adds n to the notes unless it is there.
func (r *CompareResult) note(n string) {
	if !slices.Contains(r.Notes, n) {
		r.Notes = append(r.Notes, n)
	}
}

// startServers starts a server for each kernfsim row without a Dir and
// fills the Dir in; stop stops them all.
func startServers(ctx context.Context, rows []Row, sc *serverproc.ServerConfig) (stop func() error, err error) {
	var servers []*serverproc.Server
	stop = func() error {
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	for i := range rows {
		t := &rows[i].Target
		if t.Kind != targets.TargetKernfsim || t.Dir != "" {
			continue
		}
		if sc == nil {
			return stop, serverproc.ErrNoServer
		}
		c := *sc
		c.Lock, c.Transport = t.Lock, t.ServerTransport
		s, err := serverproc.StartServer(ctx, c)
		if err != nil {
			return stop, err
		}
		servers = append(servers, s)
		t.Dir, t.Mount = s.Mountpoint(), s.Mount()
	}
	return stop, nil
}

// OpLabel is the operation's name in benchmark keys: files for the
// original open-read-close, missing for it on a missing path.
func OpLabel(op workload.Op, missing bool) string {
	switch {
	case missing && op == workload.OpStat:
		return "stat-missing"
	case missing:
		return "missing"
	case op == workload.OpOpenReadClose:
		return "files"
	}
	return string(op)
}
