// Command kernfsim builds kernfs-like trees (a synthetic sysfs) under a
// chosen lock strategy and inspects them.
//
//	kernfsim tree [tree flags]     print the tree's nodes, like find
//
// Exit status: 0 on success, 2 for a bad command line (unknown command or
// flag, a flag value out of range), 1 for anything that fails at run time.
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
)

// version is the release, set with -ldflags "-X main.version=v1.2.3"; when
// empty, the module version from the build info is shown.
var version string

const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
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
			code = exitRuntime
		}
	}()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	return report(cmd, err, stderr)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:               "kernfsim",
		Short:             "A testbed for the locking of pseudo-filesystems (Linux kernfs/sysfs)",
		Version:           versionString(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetVersionTemplate("kernfsim {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(newTreeCmd())
	return root
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// usageError is a bad command line: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// runtimeError is a failure while running a valid command: exit status 1.
type runtimeError struct{ err error }

func (e *runtimeError) Error() string { return e.err.Error() }
func (e *runtimeError) Unwrap() error { return e.err }

// report prints err and returns the exit status for it. Errors cobra
// makes itself (unknown command, wrong argument count) are usage errors.
func report(cmd *cobra.Command, err error, stderr io.Writer) int {
	var rt *runtimeError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "kernfsim: interrupted")
		return exitRuntime
	case errors.As(err, &rt):
		fmt.Fprintf(stderr, "kernfsim: %v\n", err)
		return exitRuntime
	}
	fmt.Fprintf(stderr, "kernfsim: %v\n", err)
	if cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return exitUsage
}
