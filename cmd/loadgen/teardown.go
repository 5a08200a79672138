package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/teardown"
	"github.com/kernfsim/kernfsim/locking"
)

// teardownFlags are the flags of loadgen teardown.
type teardownFlags struct {
	path            string
	sim             bool
	locks           []string
	gps             []string
	count           int
	batch           int
	readers         int
	attrs           int
	grace           locking.GraceConfig
	completeTimeout time.Duration
	format          string
	out             string
	serverArgs      []string
	tree            treeFlags
}

func newTeardownCmd(stderr io.Writer) *cobra.Command {
	f := &teardownFlags{}
	cmd := &cobra.Command{
		Use:   "teardown [--sim | --path DIR] [flags]",
		Short: "Create devices, then remove them one call after another: the caller's price of each grace-period policy",
		Long: `teardown reproduces the writer side of the seeds: 5000 umounts took 100 s
when each waited a normal RCU grace period, 0.6 s with an expedited one. It
creates --count devices, then removes them --batch per call, timing each call
as its caller sees it, and then waits until every teardown has completed
(the tree's barrier in process; over FUSE, polling kernel/kernfsim/stats
until tree.teardowns_completed has grown by two per device).

Under --locks rcu there is a run per --gps policy: normal waits a grace period
in each removal, expedited forces one, deferred queues the teardown and
returns. mutex and rwsem (add them to --locks) drain and tear down in the call:
the references, gp n/a. --readers R reads uevent of the devices not yet
removed during the storm and reports their p99: the reader-side price.

Targets: --sim removes through the tree API in process (kernfsim.ABI.Delete,
no FUSE); --path DIR writes to bus/kernfsim/delete_device of an existing
kernfsim mount (its own lock and policy, read from its stats); with neither,
loadgen starts a kernfsim server per (lock, gp) and writes to its
delete_device.`,
		Example: `  loadgen teardown --sim
  loadgen teardown --sim --locks rcu,mutex,rwsem --readers 2
  loadgen teardown --sim --gps normal --batch 5000     # 5000 removals sharing one grace period
  loadgen teardown --count 1000 --format json --out teardown.json
  loadgen teardown --path /mnt/k --count 500`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, stderr) },
	}
	fs := cmd.Flags()
	cli.PathVar(fs, &f.path, "path", "", "remove devices of the kernfsim mount at `DIR`")
	fs.BoolVar(&f.sim, "sim", false, "remove through the tree API in process (no FUSE)")
	fs.StringSliceVar(&f.locks, "locks", []string{teardown.DefaultLock}, "lock strategies: rcu (a run per --gps), mutex, rwsem")
	fs.StringSliceVar(&f.gps, "gps", gpNames(), "rcu teardown policies: normal, expedited, deferred")
	// The singular names are hidden aliases of the lists, for scripts.
	fs.StringSliceVar(&f.locks, "lock", []string{teardown.DefaultLock}, "")
	fs.StringSliceVar(&f.gps, "gp", gpNames(), "")
	fs.MarkHidden("lock")
	fs.MarkHidden("gp")
	fs.IntVar(&f.count, "count", teardown.DefaultCount, "devices to create, then remove")
	fs.IntVar(&f.batch, "batch", 1, "devices removed per call (they share one grace period)")
	fs.IntVar(&f.readers, "readers", 0, "readers of the remaining devices during the storm")
	fs.IntVar(&f.attrs, "attrs", 0, "extra attributes per device (new_device NATTRS)")
	fs.DurationVar(&f.grace.Tick, "gp-tick", 4*time.Millisecond, "grace periods begin on this tick; 4ms is HZ=250")
	fs.DurationVar(&f.grace.ExpediteCost, "expedite-cost", 0, "extra fixed cost of each expedited grace period")
	fs.BoolVar(&f.grace.ExpeditedIsNormal, "rcu-normal", false, "expedited grace periods behave as normal ones (rcu_normal=1, PREEMPT_RT)")
	fs.DurationVar(&f.completeTimeout, "complete-timeout", teardown.DefaultCompleteTimeout, "over FUSE, how long to wait for the teardowns after the storm")
	fs.StringVar(&f.format, "format", "seed", "output: seed (a table), json or bench")
	cli.PathVar(fs, &f.out, "out", "", "write the output to `FILE` instead of standard output")
	fs.StringArrayVar(&f.serverArgs, "server-arg", nil, "an extra flag for the kernfsim servers loadgen starts (repeatable)")
	addTreeFlags(fs, &f.tree)
	return cmd
}

func gpNames() []string {
	var s []string
	for _, p := range kernfsim.GPPolicies {
		s = append(s, string(p))
	}
	return s
}

// config turns the flags into a teardown.Config, rejecting bad
// input with the flag's name.
func (f *teardownFlags) config(cmd *cobra.Command) (teardown.Config, error) {
	fs := cmd.Flags()
	var c teardown.Config
	if err := positive(fs, "count", "batch"); err != nil {
		return c, err
	}
	if err := f.tree.validate(); err != nil {
		return c, err
	}
	if err := f.validateLists(); err != nil {
		return c, err
	}
	for old, now := range map[string]string{"lock": "--locks", "gp": "--gps"} {
		if fs.Changed(old) {
			fmt.Fprintf(cmd.ErrOrStderr(), "loadgen teardown: --%s is now %s\n", old, now)
		}
	}
	for _, g := range f.gps {
		c.GPs = append(c.GPs, kernfsim.GPPolicy(g))
	}
	c.Locks, c.Count, c.Batch, c.Readers, c.Attrs = f.locks, f.count, f.batch, f.readers, f.attrs
	c.Grace, c.CompleteTimeout, c.Args = f.grace, f.completeTimeout, commandLine(cmd)
	switch {
	case f.sim && f.path != "":
		return c, &cli.UsageError{Err: errors.New("--sim and --path exclude each other: choose one target")}
	case f.path != "":
		if n := given(fs, append([]string{"locks", "lock", "gps", "gp", "gp-tick", "expedite-cost", "rcu-normal"}, f.tree.given()...)...); n != "" {
			return c, &cli.UsageError{Err: fmt.Errorf("--%s applies to --sim and to the servers loadgen starts; the mount at --path has its own", n)}
		}
		if fs.Changed("server-arg") {
			return c, &cli.UsageError{Err: errors.New("--server-arg applies to the servers loadgen starts; the mount at --path has its own")}
		}
		c.Target = targets.Target{Kind: targets.TargetPath, Dir: f.path}
	case f.sim:
		if fs.Changed("server-arg") {
			return c, &cli.UsageError{Err: errors.New("--server-arg applies to the servers loadgen starts; --sim starts none")}
		}
		if f.tree.Saved() {
			return c, &cli.UsageError{Err: errors.New("--tree host and --tree archive apply to the servers loadgen starts; teardown --sim builds a synthetic tree (its size does not change a removal)")}
		}
		c.Target = targets.Target{Kind: targets.TargetSim, Tree: f.tree.config()}
	default:
		c.Target = targets.Target{Kind: targets.TargetKernfsim}
		c.Server = &serverproc.ServerConfig{Command: serverCommand(), Args: append(f.tree.serverArgs(), f.serverArgs...)}
	}
	return c, nil
}

// writerLocks are the strategies that accept writers while served: those a
// teardown storm can run under.
var writerLocks = locking.NamesWhere(func(t locking.Traits) bool { return t.AcceptsWriters })

func (f *teardownFlags) validateLists() error {
	for _, l := range f.locks {
		if !slices.Contains(writerLocks, l) {
			return &cli.UsageError{Err: fmt.Errorf("--locks: %q cannot remove devices: use %s", l, strings.Join(writerLocks, ", "))}
		}
	}
	for _, g := range f.gps {
		if _, err := kernfsim.ParseGPPolicy(g); err != nil {
			return &cli.UsageError{Err: fmt.Errorf("--gps: %v", err)}
		}
	}
	switch {
	case f.readers < 0 || f.attrs < 0:
		return &cli.UsageError{Err: fmt.Errorf("--readers %d and --attrs %d must be 0 or more", f.readers, f.attrs)}
	case f.grace.Tick <= 0 || f.grace.ExpediteCost < 0:
		return &cli.UsageError{Err: fmt.Errorf("--gp-tick %v must be positive and --expedite-cost %v 0 or more", f.grace.Tick, f.grace.ExpediteCost)}
	}
	switch f.format {
	case "seed", "json", "bench":
		return nil
	}
	return &cli.UsageError{Err: fmt.Errorf("--format %q: valid formats are seed, json and bench", f.format)}
}

// tdFlags names the flag behind each teardown.Config field: where a
// field's flag differs from flagNames' (teardown takes a list of locks).
var tdFlags = setting.Table{"Count": "--count", "Batch": "--batch", "Attrs": "--attrs", "Lock": "--locks", "Dir": "--path", "Readers": "--readers"}

// tdUsage rewords a *setting.Error of the teardown engine in terms
// of flags.
func tdUsage(err error) error {
	var ce *setting.Error
	if !errors.As(err, &ce) || tdFlags[ce.Field] == "" {
		return err
	}
	msg := tdFlags[ce.Field] + ": " + ce.Problem
	if h := ce.HintFor(flagNames.Names()); h != "" {
		msg += "; " + h
	}
	return &cli.UsageError{Err: errors.New(msg)}
}

func (f *teardownFlags) run(cmd *cobra.Command, stderr io.Writer) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	res, err := measure(cmd, stderr, f.out, func(prog *progressLine) (teardown.Result, error) {
		cfg.Progress = func(p teardown.Progress) {
			prog.set("loadgen teardown: lock %s gp %s: %s %d/%d devices, %v%s", p.Lock, p.GP, p.Phase, p.Done, p.Total,
				roundDur(p.Elapsed), eta(int64(p.Done), int64(p.Total), p.Elapsed))
		}
		res, err := teardown.Run(cmd.Context(), cfg)
		return res, tdUsage(err)
	}, func(r teardown.Result) bool { return len(r.Runs) > 0 }, writerFor(f.format, teardown.Write, teardown.WriteJSON, teardown.WriteBench))
	if err == nil {
		if bad := incomplete(res); bad != "" {
			fmt.Fprintf(stderr, "loadgen teardown: %s\n", bad)
			return &cli.ExitError{Code: cli.ExitRuntime}
		}
	}
	return err
}

// incomplete says which runs did not remove, or complete the teardown
// of, every device; "" if all did.
func incomplete(res teardown.Result) string {
	var bad []string
	for _, r := range res.Runs {
		if r.Removed != r.Count || r.Completed != r.Removed {
			bad = append(bad, fmt.Sprintf("lock %s gp %s: %d removed, %d teardowns completed, of %d", r.Lock, r.GP, r.Removed, r.Completed, r.Count))
		}
	}
	return strings.Join(bad, "; ")
}
