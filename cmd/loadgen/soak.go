package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/soak"
)

// soakFlags are the flags of loadgen soak.
type soakFlags struct {
	duration, interval, warmup time.Duration
	locks                      []string
	path                       string
	serverPID                  int
	readers                    []string
	perOp                      int
	churn                      float64
	stormEvery                 time.Duration
	stormSize                  int
	tolerance                  float64
	rssSlackMiB                int
	serverArgs                 []string
	tree                       treeFlags
}

func newSoakCmd() *cobra.Command {
	f := &soakFlags{}
	cmd := &cobra.Command{
		Use:   "soak [--duration D] [--locks LIST | --path DIR] [flags]",
		Short: "Run readers, device churn and teardown storms for a long time under each lock mode, and check for leaks",
		Long: `loadgen soak loads a kernfsim mount for --duration: readers on every
operation (open-read-close, stat, readdir, walk, a missing file) and on the
churned devices, a writer adding and removing devices at --churn per second,
and a teardown storm (--storm-size devices created, then deleted with one
write) every --storm-every. Each lock mode of --locks runs in turn, for an
equal share of the time, on a kernfsim server of its own (or, with --path,
the mount there, once).

Every --interval it prints a line: reader ops/s, p99, errors by errno, and
the server's RSS, OS threads (/proc/PID/status), goroutines and nodeid-table
size (kernel/kernfsim/stats). After a quarter of each mode's time (--warmup)
the load stops while one client reads the server's level for a few seconds
(it settles: go-fuse's bursts of reader goroutines end and the server
collects), then resumes; at the end the same. Each mode must show: no
unexpected errno (ENOENT and ENODEV on a churned device are expected);
goroutines at most --tolerance above their level after warm-up, RSS at most
--tolerance or --rss-slack-mib above it; the nodeid table back to its size
before the load once the kernel has forgotten (echo 2 >
/proc/sys/vm/drop_caches, so root only). Otherwise the exit status is 1 and
the message names the failed condition.`,
		Example: `  loadgen soak                                # 10 minutes: mutex, rwsem, rcu
  loadgen soak --duration 60s --interval 5s --cpus 8 --mem-blocks 16
  loadgen soak --path /mnt/k --server-pid $(pidof kernfsim) --duration 30m   # a mount you started`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fs := cmd.Flags()
	fs.DurationVar(&f.duration, "duration", soak.DefaultDuration, "how long to soak, shared equally by the lock modes")
	fs.DurationVar(&f.interval, "interval", soak.DefaultInterval, "how often to print a line")
	fs.DurationVar(&f.warmup, "warmup", 0, "load before the reference level is taken, per mode (default a quarter of each mode's time)")
	fs.StringSliceVar(&f.locks, "locks", soak.DefaultLocks, "lock modes to soak in turn, each on a server of its own")
	cli.PathVar(fs, &f.path, "path", "", "soak the kernfsim mount at `DIR` instead (its own lock; loadgen starts no server)")
	fs.IntVar(&f.serverPID, "server-pid", 0, "with --path: the server's process id (pidof kernfsim), for its RSS and threads")
	fs.StringSliceVar(&f.readers, "readers", soak.DefaultReaders, "operations the readers do")
	fs.IntVar(&f.perOp, "per-op", soak.DefaultPerOp, "readers per operation")
	fs.Float64Var(&f.churn, "churn", soak.DefaultChurn, "device adds and removes per second")
	fs.DurationVar(&f.stormEvery, "storm-every", soak.DefaultStormEvery, "how often a teardown storm runs")
	fs.IntVar(&f.stormSize, "storm-size", soak.DefaultStormSize, "devices created, then deleted at once, per storm (at most 256)")
	fs.Float64Var(&f.tolerance, "tolerance", soak.DefaultTolerance, "how far above its level after warm-up RSS and goroutines may end (0.10 is 10%)")
	fs.IntVar(&f.rssSlackMiB, "rss-slack-mib", soak.DefaultRSSSlack>>20, "MiB RSS may grow beyond --tolerance (the Go runtime's retention; 0 for none)")
	fs.StringArrayVar(&f.serverArgs, "server-arg", nil, "an extra flag for each kernfsim server loadgen starts (repeatable)")
	addTreeFlags(fs, &f.tree)
	return cmd
}

// config turns the flags into a soak.Config, rejecting bad input.
func (f *soakFlags) config(fs *pflag.FlagSet) (soak.Config, error) {
	if err := positive(fs, "per-op", "storm-size", "server-pid"); err != nil {
		return soak.Config{}, err
	}
	if err := f.tree.validate(); err != nil {
		return soak.Config{}, err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", f.duration}, {"interval", f.interval}, {"storm-every", f.stormEvery}} {
		if d.v <= 0 {
			return soak.Config{}, &cli.UsageError{Err: fmt.Errorf("--%s must be positive, got %v", d.name, d.v)}
		}
	}
	switch {
	case f.warmup < 0:
		return soak.Config{}, &cli.UsageError{Err: fmt.Errorf("--warmup must be 0 or more, got %v", f.warmup)}
	case f.churn <= 0 || f.churn > 100000:
		return soak.Config{}, &cli.UsageError{Err: fmt.Errorf("--churn must be above 0 and at most 100000 per second, got %g", f.churn)}
	case f.tolerance <= 0:
		return soak.Config{}, &cli.UsageError{Err: fmt.Errorf("--tolerance must be positive, got %g", f.tolerance)}
	case f.rssSlackMiB < 0:
		return soak.Config{}, &cli.UsageError{Err: fmt.Errorf("--rss-slack-mib must be 0 or more, got %d", f.rssSlackMiB)}
	case f.path != "" && (fs.Changed("locks") || len(f.serverArgs) > 0 || len(f.tree.serverArgs()) > 0):
		return soak.Config{}, &cli.UsageError{Err: errors.New("--locks, --server-arg and tree flags apply to the servers loadgen starts; the mount at --path has its own")}
	case (f.path == "") != (f.serverPID == 0):
		return soak.Config{}, &cli.UsageError{Err: errors.New("--path and --server-pid go together: the mount, and its server's process (pidof kernfsim)")}
	case len(f.locks) == 0 || len(f.readers) == 0:
		return soak.Config{}, &cli.UsageError{Err: errors.New("--locks and --readers need at least one name each")}
	}
	return soak.Config{Duration: f.duration, Interval: f.interval, Warmup: f.warmup, Locks: f.locks,
		Dir: f.path, ServerPID: f.serverPID, Readers: f.readers, Workers: loadgen.Workers, PerOp: f.perOp, Churn: f.churn,
		StormEvery: f.stormEvery, StormSize: f.stormSize, Tolerance: f.tolerance, RSSSlack: rssSlack(f.rssSlackMiB),
		Server: &serverproc.ServerConfig{Command: serverCommand(), Args: append(f.tree.serverArgs(), f.serverArgs...)}}, nil
}

func (f *soakFlags) run(cmd *cobra.Command) error {
	c, err := f.config(cmd.Flags())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	var werr error
	c.OnSample = func(s soak.Sample) { werr = errors.Join(werr, soak.WriteSample(out, s)) }
	c.OnMode = func(m soak.Mode) { werr = errors.Join(werr, soak.WriteMode(out, m)) }
	res, err := soak.Run(cmd.Context(), c)
	if err != nil {
		return errors.Join(err, werr)
	}
	if err := errors.Join(werr, soak.WriteSummary(out, res)); err != nil {
		return err
	}
	if fails := res.Failures(); len(fails) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "loadgen: soak failed: %s\n", strings.Join(fails, "; "))
		return &cli.ExitError{Code: cli.ExitRuntime}
	}
	return nil
}

// rssSlack is --rss-slack-mib for Config.RSSSlack, where 0 means the
// default and a negative value none.
func rssSlack(mib int) int64 {
	if mib == 0 {
		return -1
	}
	return int64(mib) << 20
}
