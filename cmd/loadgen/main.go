// Command loadgen reproduces the sysfs benchmarks of the kernfs locking work.
//
// It runs the open/read/close and missing-file benchmarks against the
// in-process kernfsim walker (--sim), any directory (--path DIR: /sys,
// tmpfs, a kernfsim mount) or a kernfsim FUSE server it starts itself
// (the default). loadgen compare puts lock strategies side by side.
//
//	loadgen [--path DIR | --sim] [--lock M] [--threads N] [--times N] [--missing] ...
//	loadgen compare [--locks LIST] [--threads LIST] [--plot FILE.svg] ...
//
// Exit status: 0 on success, 2 for bad input (a bad flag, a directory or
// file that cannot be used, a dead mount), 1 for a failure at run time,
// unexpected errors during the run, or an interrupted run (whose partial
// results are printed).
//
// Lock ordering. treeFlags.mu is the only lock here:
//
//	treeFlags.mu
//	  the tree's locks while BuildTree builds it (package kernfsim)
//
// treeFlags.mu protects the host mirrors by lock. BuildTree holds it
// while it loads a mirror, so that runs under one lock share one mirror.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/internal/buildinfo"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/setting"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit status. It never
// panics: an internal error is reported and exits 1.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "loadgen: internal error: %v\n%s", r, debug.Stack())
			code = cli.ExitRuntime
		}
	}()
	root := newRootCmd(stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(context.WithValue(ctx, argsKey{}, append([]string{"loadgen"}, args...)))
	return cli.Report("loadgen", cmd, classify(err), stderr)
}

// argsKey is the context key of the command line, which results record.
type argsKey struct{}

// commandLine is the command line cmd runs under, program name first.
func commandLine(cmd *cobra.Command) []string {
	args, _ := cmd.Context().Value(argsKey{}).([]string)
	return args
}

func newRootCmd(stderr io.Writer) *cobra.Command {
	root := newRunCmd(stderr)
	root.SilenceErrors, root.SilenceUsage = true, true
	root.Version = buildinfo.Read().String()
	root.SetVersionTemplate("loadgen {{.Version}}\n")
	root.CompletionOptions = cobra.CompletionOptions{DisableDefaultCmd: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.UsageError{Err: err} })
	root.AddCommand(newCompareCmd(stderr), newPlotCmd(), newSoakCmd(), newServeCmd(), newWorkerCmd())
	root.AddCommand(newTeardownCmd(stderr), newUmountStormCmd(), newUnshareCmd(), newKernelChildCmd())
	return root
}

// classify gives err the type cli.Report maps to loadgen's exit status:
// a *setting.Error is bad input, said in terms of flags; an error
// not typed already is a failure at run time.
func classify(err error) error {
	var (
		ce    *setting.Error
		exit  *cli.ExitError
		usage *cli.UsageError
		input *cli.InputError
		rt    *cli.RuntimeError
	)
	switch {
	case err == nil, errors.As(err, &exit), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ce):
		return &cli.InputError{Err: errors.New(configMessage(ce))}
	case errors.As(err, &usage), errors.As(err, &input), errors.As(err, &rt):
		return err
	}
	return &cli.RuntimeError{Err: inFlags(err)}
}

// inFlags is err with the text of a *setting.TextError in it put in
// terms of flags. It unwraps to err.
func inFlags(err error) error { return flagNames.Names().InText(err) }

// noArgs refuses positional arguments as bad input (cobra.NoArgs's
// "unknown command"), reported without the pointer to the help.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return &cli.InputError{Err: err}
	}
	return nil
}

// flagNames names the flag behind each field that the engine's errors
// and text name: loadgen.Config's and CompareConfig's fields, a target
// kind, a tree's size, a tool's own fields. It is the command's one
// table; teardown's Config overrides a few (tdFlags).
var flagNames = setting.Table{
	"Threads": "--threads", "Times": "--times", "Files": "--files", "FileList": "--file",
	"BufSize": "--bufsize", "Op": "--op", "Missing": "--missing", "MissingPath": "--missing-path",
	"Dir": "--path", "Lock": "--lock", "Procs": "--procs", "WorkerCommand": "--procs",
	"Churn": "--churn", "Tree": "tree flags", "Rows": "--targets", "Ops": "--ops", "PerOp": "--per-op",
	"SimCost": "--sim-cost", "SimShared": "--sim-cost", "Calibrate": "--calibrate",
	"Writers": "--writers", "WriteRate": "--write-rate",
	"TargetSim": "--sim", "Tree.Cgroups": "--cgroups", "Tree.MemBlocks": "--mem-blocks", "Count": "--count",
	"MinDuration": "--min-duration", "PinSingle": "--pin-single", "Repeats": "--repeats", "SimTimes": "--sim-times",
	"Locks": "--locks", "Format": "--format",
}

// configMessage is a *setting.Error in terms of flags.
func configMessage(ce *setting.Error) string {
	s := flagNames.Name(ce.Field) + ": " + ce.Problem
	if h := ce.HintFor(flagNames.Names()); h != "" {
		s += "; " + h
	}
	return s
}
