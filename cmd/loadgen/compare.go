package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/plot"
	"github.com/kernfsim/kernfsim/loadgen/report"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
)

// compareFlags are the flags of loadgen compare.
type compareFlags struct {
	locks      []string
	threads    []int
	times      int
	simTimes   int
	sysTimes   int
	hwlocTimes int
	repeats    int
	ops        []string
	targets    []string
	sysDir     string
	sim        bool
	plot       string
	seed       bool
	format     string
	out        string
	pin        bool
	pinSingle  bool
	minDur     time.Duration
	warmUp     time.Duration
	writers    int
	writeRate  float64
	serverArgs []string
	transports []string
	tree       treeFlags
	simCost    simCostFlags
}

// defaultCompareLocks are the rows of the main job: the eras of kernfs's
// lock (mutex, rwsem), the design beyond it (rcu) and the baseline (none).
// The lock list "all" adds every other design.
var defaultCompareLocks = []string{"mutex", "rwsem", "rcu", "none"}

// targetKinds are the row kinds of a comparison, in table order.
var targetKinds = []string{"kernfsim", "sim", "sys"}

func newCompareCmd(stderr io.Writer) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare [flags]",
		Short: "Compare lock strategies side by side: files and missing, over thread counts",
		Long: `compare runs every target x lock x op x thread count --repeats times,
interleaved so that drift in the machine hits every row alike (the rows
forward in one repeat and backward in the next, A B C C B A, and rotated
every two repeats), and prints per op a table: per row (target and lock) and
thread count the median per-op, its ratio to mutex's (x) and the scaling
efficiency (e, 1.00 ideal). Rows: kernfsim (FUSE mounts loadgen starts, one
per lock), sim (the in-process walker, one per lock) and sys (the real /sys,
a reference).

Each phase of a run does at least --times operations per worker and lasts at
least --min-duration (the workers go on until then; the operations done are
in --format json), so that cheap cells still span many scheduler ticks. Each
row is warmed up, untimed, for --warm-up before the first repeat. As in the
seed, the concurrent workers are pinned to CPU i mod ncpus (--pin) and the
single worker is not (--pin-single pins it).

The field workloads (--op hwloc, lstopo, coldplug) compare /sys with a mirror
of it: unless --tree or a flag sizing a synthetic tree is given, the kernfsim
and sim rows serve --tree host:SYS. An hwloc cell shows the median and the
last worker's time to done of --hwloc-times discoveries (MPI ranks starting
at once). --op cgroup is a Kubernetes node agent reading every cgroup's
stat files (--cgroups containers, 64 by default) while a writer starts and
stops containers.

Nothing writes by default, so a lock whose cost is on the writer's side
looks free: --writers N runs N writers beside every cell's readers, each
making --write-rate changes a second and timing them, and each op's tables
add the writers' latency per change beside the lock's use.`,
		Example: `  loadgen compare
  loadgen compare --sim --plot compare.svg          # in-process only: no root, no FUSE
  loadgen compare --threads 1,2,48 --times 2000 --plot compare.svg
  loadgen compare --ops hwloc                         # /sys and its mirror under each lock
  loadgen compare --ops coldplug --tree synthetic --mem-blocks 100000 --targets kernfsim,sim
  loadgen compare --ops files,cgroup --writers 2 --write-rate 200    # readers beside writers: the write side's cost shows
  loadgen compare --targets sim --locks mutex,rwsem --format bench > sim.txt; benchstat -col /lock sim.txt
  loadgen compare --sim-cost auto --locks rwsem --threads 1,2,8,48   # sim rows with the kernel's work outside the lock
  loadgen compare --locks mutex,rwsem --threads 1,16,48 --seed        # beside seed 002's published figures
  loadgen compare --locks all --writers 1 --ops files,cgroup           # every design, with a writer beside the readers`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, stderr) },
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&f.locks, "locks", defaultCompareLocks, "lock strategies, or all for every design ("+strings.Join(locking.Names, ", ")+")")
	fs.IntSliceVar(&f.threads, "threads", nil, "thread counts (default 1, ncpus, 4 x ncpus, 48)")
	fs.IntVar(&f.times, "times", loadgen.DefaultCompareTimes, "operations per worker in each phase of a run, at least (--min-duration goes on past them)")
	fs.IntVar(&f.simTimes, "sim-times", 0, "operations per worker in each sim run (default 20 x --times: sim operations are 10-50 times cheaper)")
	fs.IntVar(&f.sysTimes, "sys-times", 0, "operations per worker in each sys run of files, missing and the like (default 10 x --times: /sys is 30-100 times faster than FUSE)")
	fs.IntVar(&f.hwlocTimes, "hwloc-times", loadgen.DefaultCompareHwlocTimes, "discoveries per worker in hwloc and lstopo runs (an MPI rank does one)")
	fs.IntVar(&f.repeats, "repeats", loadgen.DefaultCompareRepeats, "runs of each configuration (the table shows medians)")
	fs.StringSliceVar(&f.ops, "ops", loadgen.DefaultCompareOps, "ops: files, missing, stat-missing, or an operation ("+opList()+")")
	fs.StringSliceVar(&f.ops, "op", loadgen.DefaultCompareOps, "the same as --ops")
	fs.MarkHidden("op") // one name for one thing; "op" stays accepted, as in a plain run
	fs.StringSliceVar(&f.targets, "targets", targetKinds, "row kinds: kernfsim, sim, sys (kernfsim and sys are skipped with a note when unavailable, unless named)")
	fs.BoolVar(&f.sim, "sim", false, "only the sim rows (--targets sim): no FUSE, no root")
	cli.PathVar(fs, &f.sysDir, "sys", "/sys", "the real sysfs of the sys rows")
	cli.PathVar(fs, &f.plot, "plot", "", "also draw per-op latency against threads, a line per row, to `FILE` (.svg, .png or .pdf)")
	fs.StringVar(&f.format, "format", "table", "output: table, json or bench")
	fs.BoolVar(&f.seed, "seed", false, "after the table, seed 002's published figures beside this run's at the same op and thread count (files and missing at 1, 16 and 48 threads), with the ratio of rwsem to mutex there and here")
	cli.PathVar(fs, &f.out, "out", "", "write the output to `FILE` instead of standard output")
	fs.BoolVar(&f.pin, "pin", true, "pin the concurrent phase's worker i to CPU i mod ncpus")
	fs.BoolVar(&f.pinSingle, "pin-single", false, "pin the single phase's worker too, to the first CPU (the seed runs it unpinned)")
	fs.DurationVar(&f.minDur, "min-duration", loadgen.DefaultCompareMinDuration,
		"each phase of a run lasts at least this long, past --times if need be (0: --times alone; not hwloc and lstopo)")
	fs.DurationVar(&f.warmUp, "warm-up", loadgen.DefaultCompareWarmUp, "warm each row up, untimed, this long before the first repeat (0: none)")
	fs.IntVar(&f.writers, "writers", 0, "writers changing the tree beside each cell's readers, each timing its own changes: devices through bus/kernfsim/new_device and delete_device "+
		"(--op cgroup: containers' cgroups; coldplug: memory blocks); the tables add their latency per change (0: none; sys rows and locks that refuse writers: readers only)")
	fs.Float64Var(&f.writeRate, "write-rate", loadgen.DefaultWriteRate, "each writer's changes per second, `RATE` (100: one every 10 ms, longer than a grace period; 20 in a 200 ms phase)")
	fs.StringArrayVar(&f.serverArgs, "server-arg", nil, "an extra flag for the kernfsim servers (repeatable)")
	fs.StringSliceVar(&f.transports, "transports", nil, "kernfsim rows per transport: devfuse, uring, auto (default: one row per lock on the server's default transport)")
	addTreeFlags(fs, &f.tree)
	addSimCostFlags(fs, &f.simCost)
	return cmd
}

// config turns the flags into a loadgen.CompareConfig; notes are rows
// skipped, for stderr.
func (f *compareFlags) config(cmd *cobra.Command) (cc loadgen.CompareConfig, notes []string, err error) {
	if err := positive(cmd.Flags(), "times", "sim-times", "sys-times", "hwloc-times", "repeats"); err != nil {
		return cc, nil, err
	}
	if err := f.checkWriters(cmd.Flags()); err != nil {
		return cc, nil, err
	}
	if err := notNegative(map[string]time.Duration{"min-duration": f.minDur, "warm-up": f.warmUp}); err != nil {
		return cc, nil, err
	}
	if f.seed && f.format != "table" {
		return cc, nil, &cli.UsageError{Err: fmt.Errorf("--seed adds a table to the text output, not to --format %s: drop one of them", f.format)}
	}
	if f.sim {
		if cmd.Flags().Changed("targets") {
			return cc, nil, &cli.UsageError{Err: errors.New("--sim is --targets sim: give one or the other")}
		}
		f.targets = []string{"sim"}
	}
	if note, err := f.defaultTree(cmd.Flags()); err != nil {
		return cc, nil, err
	} else if note != "" {
		notes = append(notes, note)
	}
	if err := f.tree.defaultCgroups(f.ops); err != nil {
		return cc, nil, cliError(err)
	}
	if err := f.tree.validate(); err != nil {
		return cc, nil, err
	}
	if err := f.validateLists(); err != nil {
		return cc, nil, err
	}
	if n := given(cmd.Flags(), "transports", "server-arg"); n != "" && !slices.Contains(f.targets, "kernfsim") {
		return cc, nil, &cli.UsageError{Err: fmt.Errorf("--%s applies to the kernfsim rows, and --targets has none", n)}
	}
	explicit := cmd.Flags().Changed("targets")
	for _, kind := range targetKinds {
		if !slices.Contains(f.targets, kind) {
			continue
		}
		rows, note, err := f.rows(kind, explicit)
		if err != nil {
			return cc, nil, err
		}
		cc.Rows = append(cc.Rows, rows...)
		if note != "" {
			notes = append(notes, note)
		}
	}
	cc.Ops, cc.Threads, cc.Times, cc.SimTimes, cc.Repeats, cc.NoPin = f.ops, f.threads, f.times, f.simTimes, f.repeats, !f.pin
	cc.SysTimes, cc.PinSingle = f.sysTimes, f.pinSingle
	cc.MinDuration, cc.WarmUp = noneIfZero(f.minDur), noneIfZero(f.warmUp)
	cc.HwlocTimes, cc.Args, cc.FieldNames = f.hwlocTimes, commandLine(cmd), flagNames.Names()
	if f.writers > 0 {
		cc.Writers, cc.WriteRate = f.writers, f.writeRate
	}
	if err := f.simCost.check(cmd, slices.Contains(f.targets, "sim")); err != nil {
		return cc, nil, err
	}
	cc.SimCost = f.simCost.cost.d
	if f.simCost.cost.auto {
		cc.Calibrate = f.simCost.calibrate
	}
	cc.Server = &serverproc.ServerConfig{Command: serverCommand(), Args: append(f.tree.serverArgs(), f.serverArgs...)}
	return cc, notes, nil
}

// checkWriters checks the writers' count and rate: a count from 0 to
// loadgen.MaxWriters, a positive rate, and no rate without writers.
func (f *compareFlags) checkWriters(fs *pflag.FlagSet) error {
	switch {
	case f.writers < 0 || f.writers > loadgen.MaxWriters:
		return &cli.UsageError{Err: fmt.Errorf("--writers must be 0 to %d, got %d", loadgen.MaxWriters, f.writers)}
	case f.writeRate <= 0 || f.writeRate > 100000:
		return &cli.UsageError{Err: fmt.Errorf("--write-rate must be above 0 and at most 100000 changes per second, got %g", f.writeRate)}
	case fs.Changed("write-rate") && f.writers == 0:
		return &cli.UsageError{Err: errors.New("--write-rate paces the writers: give --writers N too")}
	}
	return nil
}

// noneIfZero is a duration flag as CompareConfig takes it: 0 there is
// the default, a negative value none.
func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// hostOps are the field workloads, compared on a mirror of the sys rows'
// directory by default.
var hostOps = []string{string(workload.OpHwloc), string(workload.OpLstopo), string(workload.OpColdplug)}

// defaultTree mirrors the sys rows' sysfs (a host tree) when every op is
// a field workload and no flag chooses or sizes the tree, and says so.
func (f *compareFlags) defaultTree(fs *pflag.FlagSet) (string, error) {
	for _, op := range f.ops {
		if !slices.Contains(hostOps, op) {
			return "", nil
		}
	}
	for _, n := range []string{"tree", "cpus", "sockets", "threads-per-core", "numa-nodes", "mem-blocks", "netdevs", "disks"} {
		if fs.Changed(n) {
			return "", nil
		}
	}
	if st, err := os.Stat(f.sysDir); err != nil || !st.IsDir() || !slices.ContainsFunc(f.targets, func(k string) bool { return k != "sys" }) {
		return "", nil // nothing to mirror, or nothing served from a tree
	}
	if err := fs.Set("tree", "host:"+f.sysDir); err != nil {
		return "", &cli.UsageError{Err: fmt.Errorf("--sys %s: %w", f.sysDir, err)}
	}
	return fmt.Sprintf("the kernfsim and sim rows serve a mirror of %s (--tree host:%s); --tree synthetic for kernfsim's synthetic tree",
		f.sysDir, f.sysDir), nil
}

func (f *compareFlags) validateLists() error {
	bad := func(flag, v, valid string) error {
		return &cli.UsageError{Err: fmt.Errorf("--%s: %q is not one of %s", flag, v, valid)}
	}
	if slices.Contains(f.locks, "all") {
		if len(f.locks) > 1 {
			return &cli.UsageError{Err: fmt.Errorf("--locks all is every design: give it alone, not in a list (got --locks %s)", strings.Join(f.locks, ","))}
		}
		f.locks = locking.Names
	}
	for _, l := range f.locks {
		if !slices.Contains(locking.Names, l) {
			return bad("locks", l, "all, "+strings.Join(locking.Names, ", "))
		}
	}
	for _, t := range f.targets {
		if !slices.Contains(targetKinds, t) {
			return bad("targets", t, strings.Join(targetKinds, ", "))
		}
	}
	for _, tp := range f.transports {
		if _, err := uring.ParseKind(tp); err != nil {
			return bad("transports", tp, transportList())
		}
	}
	for _, th := range f.threads {
		if th <= 0 {
			return &cli.UsageError{Err: fmt.Errorf("--threads: %d is not a positive thread count", th)}
		}
	}
	if _, ok := plot.Format(f.plot); f.plot != "" && !ok {
		return &cli.UsageError{Err: fmt.Errorf("--plot %s: the extension names the format: .%s", f.plot, strings.Join(plot.Formats, ", ."))}
	}
	switch f.format {
	case "table", "json", "bench":
		return nil
	}
	return &cli.UsageError{Err: fmt.Errorf("--format %q: valid formats are table, json and bench", f.format)}
}

// rows are the rows of one kind. A kind that cannot run here is skipped
// with a note, or is an error when the user named it.
func (f *compareFlags) rows(kind string, explicit bool) ([]loadgen.Row, string, error) {
	var rows []loadgen.Row
	switch kind {
	case "kernfsim":
		if serverCommand() == nil {
			if explicit {
				return nil, "", serverproc.ErrNoServer
			}
			return nil, "skipping the kernfsim rows: " + inFlags(serverproc.ErrNoServer).Error(), nil
		}
		transports := f.transports
		if len(transports) == 0 {
			transports = []string{""}
		}
		for _, tp := range transports {
			for _, l := range f.locks {
				rows = append(rows, loadgen.Row{Target: targets.Target{Kind: targets.TargetKernfsim, Lock: l, ServerTransport: tp}})
			}
		}
	case "sim":
		for _, l := range f.locks {
			rows = append(rows, loadgen.Row{Target: f.tree.simTarget(l)})
		}
	case "sys":
		if st, err := os.Stat(f.sysDir + "/devices/system/cpu"); err != nil || !st.IsDir() {
			if explicit {
				return nil, "", &cli.UsageError{Err: fmt.Errorf("--sys %s: no devices/system/cpu there: %v", f.sysDir, err)}
			}
			return nil, fmt.Sprintf("skipping the sys rows: %s/devices/system/cpu is not readable", f.sysDir), nil
		}
		rows = append(rows, loadgen.Row{Target: targets.Target{Kind: targets.TargetPath, Dir: f.sysDir}})
	}
	return rows, "", nil
}

func (f *compareFlags) run(cmd *cobra.Command, stderr io.Writer) error {
	cc, notes, err := f.config(cmd)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "loadgen compare: %s\n", n)
	}
	w, closeOut, err := openOut(f.out, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	plotW, plotFormat, closePlot, err := openPlot(f.plot)
	if err != nil {
		return errors.Join(err, closeOut())
	}
	prog := newProgressLine(stderr)
	cc.Progress = func(p loadgen.CompareProgress) {
		prog.set("loadgen compare: %d/%d runs, %v elapsed%s; next %s", p.Done, p.Total, roundDur(p.Elapsed), eta(int64(p.Done), int64(p.Total), p.Elapsed), p.Next)
	}
	res, err := loadgen.Compare(cmd.Context(), cc)
	prog.clear()
	for _, c := range res.SimCalibrations {
		fmt.Fprintf(stderr, "loadgen compare: calibration: %s\n", c)
	}
	if len(res.Cells) > 0 {
		err = errors.Join(err, f.write(w, res))
		if plotW != nil {
			err = errors.Join(err, plot.WriteCompare(plotW, res, plotFormat))
		}
	}
	err = errors.Join(err, closePlot(), closeOut())
	if err == nil && res.Unexpected() > 0 {
		fmt.Fprintf(stderr, "loadgen compare: %d operations failed unexpectedly\n", res.Unexpected())
		return &cli.ExitError{Code: cli.ExitRuntime}
	}
	return err
}

// eta says how long is left at the pace so far, or "" before any is done.
func eta(done, total int64, elapsed time.Duration) string {
	if done <= 0 || total <= done {
		return ""
	}
	left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	return fmt.Sprintf(", ~%v left", left.Round(time.Second))
}

func (f *compareFlags) write(w io.Writer, res loadgen.CompareResult) error {
	if err := writerFor(f.format, report.WriteCompareTable, report.WriteCompareJSON, report.WriteCompareBench)(w, res); err != nil {
		return err
	}
	if f.seed && f.format == "table" {
		return report.WriteSeedTable(w, res)
	}
	return nil
}
