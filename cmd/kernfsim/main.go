// Command kernfsim builds a kernfs-like tree under a chosen lock strategy and inspects it.
//
// The tree is a synthetic sysfs, or a mirror of a host directory.
//
//	kernfsim mount MOUNTPOINT [flags]  serve the tree over FUSE until SIGINT/SIGTERM
//	kernfsim tree [tree flags]         print the tree's nodes, like find
//	kernfsim stats MOUNTPOINT          pretty-print a mount's live counters
//	kernfsim cpuinfo [tree flags]      print a /proc/cpuinfo consistent with the tree
//
// Exit status: 0 on success, 2 for a bad command line (unknown command or
// flag, a flag value out of range, an empty MOUNTPOINT, a synthetic tree
// larger than half the memory available, a --tree host directory holding
// entries where the in-tree ABI goes), 1 for anything that fails at run
// time.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/internal/buildinfo"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/mountcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit status. It
// never panics: an internal error is reported and exits 1.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "kernfsim: internal error: %v\n%s", r, debug.Stack())
			code = cli.ExitRuntime
		}
	}()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	return cli.Report("kernfsim", cmd, err, stderr)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:               "kernfsim",
		Short:             "A testbed for the locking of pseudo-filesystems (Linux kernfs/sysfs)",
		Version:           buildinfo.Read().String(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetVersionTemplate("kernfsim {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.UsageError{Err: err} })
	root.AddCommand(newTreeCmd(), mountcmd.New(), newStatsCmd(), newCPUInfoCmd())
	return root
}
