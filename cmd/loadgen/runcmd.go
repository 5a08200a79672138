package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/report"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// runFlags are the flags of a single run (the root command).
type runFlags struct {
	path        string
	sim         bool
	lock        string
	threads     int
	times       int
	files       int
	fileList    []string
	bufsize     int
	missing     bool
	missingPath string
	op          string
	pin         bool
	pinSingle   bool
	minDur      time.Duration
	procs       bool
	churn       float64
	writers     int
	format      string
	out         string
	serverArgs  []string
	transport   string
	tree        treeFlags
	simCost     simCostFlags
}

func newRunCmd(stderr io.Writer) *cobra.Command {
	f := &runFlags{lock: serverproc.DefaultLock}
	cmd := &cobra.Command{
		Use:   "loadgen [--path DIR | --sim] [flags]",
		Short: "Reproduce the sysfs open/read/close and missing-file benchmarks against kernfsim or any directory",
		Long: `loadgen runs Fox Chen's sysfs benchmark as Ian Kent used it for the kernfs
locking work: a single worker, not pinned, does --times operations, then
--threads workers, each pinned to CPU i mod ncpus, do --times operations each
at once. It prints the original's lines (single:, concur: ... CPU n, times:)
and then a summary: latency percentiles, throughput, concur/single and
scaling efficiency. --pin=false leaves the concurrent workers unpinned too;
--pin-single pins the single worker to the first CPU (over an io_uring FUSE
server that keeps its requests on one CPU's queue). --min-duration makes each
phase last at least that long: its workers go on past --times until then.

Targets: --sim is the in-process kernfsim walker (no FUSE; workers are uid
1000, gid 1000, so permission checks are a user's); --path DIR is real system
calls against any directory (/sys, tmpfs, a kernfsim mount); with neither,
loadgen starts a kernfsim server in a separate process on a temporary
mountpoint and removes it afterwards. The tree flags (kernfsim's own) build
the tree of --sim and of that server: a synthetic machine (default 64 CPUs
in 2 sockets) or, with --tree host[:DIR], a mirror of this host's /sys.`,
		Example: `  loadgen --sim --lock mutex --threads 48 --times 2000
  loadgen --path /sys --threads 48 --missing
  loadgen --sim --op hwloc --cpus 448 --sockets 4 --threads 8
  loadgen --op hwloc --tree host --procs --threads 48 --times 1   # MPI ranks starting at once, on a mirror of /sys
  loadgen --sim --op coldplug --mem-blocks 100000 --lock rcu --churn 2000
  loadgen --sim --op cgroup --cgroups 200 --lock rcu --writers 4   # a node agent while containers start and stop
  loadgen --sim --lock rcu --churn 200 --format json --out run.json
  loadgen --sim --sim-cost auto --threads 48      # the kernel's work outside kernfs's lock, calibrated against /sys`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, stderr) },
	}
	addRunFlags(cmd.Flags(), f)
	return cmd
}

func addRunFlags(fs *pflag.FlagSet, f *runFlags) {
	cli.PathVar(fs, &f.path, "path", "", "measure real system calls against `DIR` (/sys, tmpfs, a kernfsim mount)")
	fs.BoolVar(&f.sim, "sim", false, "measure the in-process kernfsim walker (no FUSE)")
	fs.Var(lockValue{&f.lock}, "lock", "lock strategy of --sim or of the server loadgen starts: mutex, rwsem, rcu, none")
	fs.IntVar(&f.threads, "threads", runtime.NumCPU(), "concurrent workers")
	fs.IntVar(&f.times, "times", 0, "operations per worker (default 10000; 20 for --op hwloc and lstopo, 1000 for coldplug and cgroup)")
	fs.IntVar(&f.files, "files", 0, "distinct files K; worker i uses file i mod K (default max(1, threads/2))")
	fs.StringArrayVar(&f.fileList, "file", nil, "a file to use, relative to the target (repeatable; default: chosen automatically)")
	fs.IntVar(&f.bufsize, "bufsize", workload.DefaultBufSize, "bytes per read")
	fs.BoolVar(&f.missing, "missing", false, "every worker opens one missing path; the failing open is the operation")
	cli.PathVar(fs, &f.missingPath, "missing-path", loadgen.DefaultMissingPath, "the missing path, relative to the target")
	fs.StringVar(&f.op, "op", string(workload.OpOpenReadClose), "operation: "+opList())
	fs.BoolVar(&f.pin, "pin", true, "pin the concurrent phase's worker i to CPU i mod ncpus (--pin=false to let the scheduler place them)")
	fs.BoolVar(&f.pinSingle, "pin-single", false, "pin the single phase's worker to the first CPU (the seed runs it unpinned)")
	fs.DurationVar(&f.minDur, "min-duration", 0, "each phase lasts at least this long: its workers go on past --times until then (0: --times alone, as the seed)")
	fs.BoolVar(&f.procs, "procs", false, "run workers as separate processes (no shared fd table)")
	fs.Float64Var(&f.churn, "churn", 0, "add and remove devices at `RATE` per second and writer during the run (kernfsim targets); "+
		"with --op coldplug, hot-add memory blocks at RATE (default 1000 where the target can); with --op cgroup, make and remove containers' cgroups at RATE (default 100 where the target can)")
	fs.IntVar(&f.writers, "writers", 0, "writers making --churn changes a second each, each timing its own changes (default 1 where there is a rate; "+
		"--writers alone churns devices at 100 a second each)")
	fs.StringVar(&f.format, "format", "seed", "output: seed, json or bench")
	cli.PathVar(fs, &f.out, "out", "", "write the output to `FILE` instead of standard output")
	fs.Var(transportValue{&f.transport}, "transport", "the `T`ransport of the kernfsim server loadgen starts: "+transportList()+" (default: the server's, auto)")
	fs.StringArrayVar(&f.serverArgs, "server-arg", nil, "an extra flag for the kernfsim server loadgen starts (repeatable), e.g. --server-arg=--entry-timeout=1s")
	addTreeFlags(fs, &f.tree)
	addSimCostFlags(fs, &f.simCost)
}

func opList() string {
	var s []string
	for _, o := range workload.Ops {
		s = append(s, string(o))
	}
	return strings.Join(s, ", ")
}

// config turns the flags into a loadgen.Config, rejecting bad input.
func (f *runFlags) config(cmd *cobra.Command) (loadgen.Config, error) {
	fs := cmd.Flags()
	if err := positive(fs, "threads", "times", "files", "bufsize"); err != nil {
		return loadgen.Config{}, err
	}
	if f.path == "" {
		if err := f.tree.defaultCgroups([]string{f.op}); err != nil {
			return loadgen.Config{}, cliError(err)
		}
	}
	if err := notNegative(map[string]time.Duration{"min-duration": f.minDur}); err != nil {
		return loadgen.Config{}, err
	}
	if err := f.tree.validate(); err != nil {
		return loadgen.Config{}, err
	}
	switch f.format {
	case "seed", "json", "bench":
	default:
		return loadgen.Config{}, &cli.UsageError{Err: fmt.Errorf("--format %q: valid formats are seed, json and bench", f.format)}
	}
	t, err := f.target(cmd)
	if err != nil {
		return loadgen.Config{}, err
	}
	if err := f.simCost.check(cmd, f.sim); err != nil {
		return loadgen.Config{}, err
	}
	return loadgen.Config{Target: t, Op: workload.Op(f.op), Missing: f.missing, MissingPath: f.missingPath,
		Threads: f.threads, Times: f.times, Files: f.files, FileList: f.fileList, BufSize: f.bufsize,
		NoPin: !f.pin, PinSingle: f.pinSingle, MinDuration: f.minDur, Procs: f.procs, WorkerCommand: selfCommand("__worker"), Churn: f.churn,
		Writers: f.writers, Args: commandLine(cmd), FieldNames: flagNames.Names(),
		Server: &serverproc.ServerConfig{Command: serverCommand(), Args: f.serverFlags()}}, nil
}

func (f *runFlags) target(cmd *cobra.Command) (targets.Target, error) {
	fs := cmd.Flags()
	switch {
	case f.sim && f.path != "":
		return targets.Target{}, &cli.UsageError{Err: errors.New("--sim and --path exclude each other: choose one target")}
	case f.path != "":
		if n := given(fs, append([]string{"lock"}, f.tree.given()...)...); n != "" {
			return targets.Target{}, &cli.UsageError{Err: fmt.Errorf("--%s applies to --sim and to the server loadgen starts; the mount at --path has its own", n)}
		}
		if n := given(fs, serverOnly...); n != "" {
			return targets.Target{}, &cli.UsageError{Err: fmt.Errorf("--%s applies to the server loadgen starts; the mount at --path has its own", n)}
		}
		return targets.Target{Kind: targets.TargetPath, Dir: f.path}, nil
	case f.sim:
		if n := given(fs, serverOnly...); n != "" {
			return targets.Target{}, &cli.UsageError{Err: fmt.Errorf("--%s applies to the server loadgen starts; --sim starts none (it walks the tree in process)", n)}
		}
		return f.tree.simTarget(f.lock), nil
	}
	return targets.Target{Kind: targets.TargetKernfsim, Lock: f.lock, ServerTransport: f.transport}, nil
}

// serverOnly are the run's flags for the server loadgen starts, and for
// nothing else.
var serverOnly = []string{"transport", "server-arg"}

func (f *runFlags) serverFlags() []string {
	return append(f.tree.serverArgs(), f.serverArgs...)
}

func (f *runFlags) run(cmd *cobra.Command, stderr io.Writer) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	if err := f.simCost.apply(cmd, &cfg, stderr); err != nil {
		return err
	}
	res, err := measure(cmd, stderr, f.out, func(prog *progressLine) (loadgen.Result, error) {
		cfg.Progress = func(p loadgen.Progress) { prog.set("%s", progressText(p)) }
		return loadgen.Run(cmd.Context(), cfg)
	}, func(r loadgen.Result) bool { return r.Single.Ran }, writerFor(f.format, report.WriteSeed, report.WriteJSON, report.WriteBench))
	if err == nil && res.Unexpected() > 0 {
		fmt.Fprintf(stderr, "loadgen: %d operations failed unexpectedly (see errors: in the output)\n", res.Unexpected())
		return &cli.ExitError{Code: cli.ExitRuntime}
	}
	return err
}

// progressText is the status line of a run's progress.
func progressText(p loadgen.Progress) string {
	switch {
	case p.MinDuration > 0 && p.Done >= p.Total:
		return fmt.Sprintf("loadgen: %s %d ops, %v of at least %v", p.Phase, p.Done, roundDur(p.Elapsed), p.MinDuration)
	case p.Total > 0 && p.Done > 0:
		return fmt.Sprintf("loadgen: %s %d/%d ops, %v%s", p.Phase, p.Done, p.Total, roundDur(p.Elapsed), eta(p.Done, p.Total, p.Elapsed))
	}
	return fmt.Sprintf("loadgen: %s running, %v", p.Phase, roundDur(p.Elapsed))
}

// selfCommand is this program run with a hidden subcommand, or nil if its
// path is unknown.
func selfCommand(sub string) []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, sub}
}
