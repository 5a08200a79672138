package main

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/mountcmd"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
)

// serveMain serves a kernfsim mount in the foreground, with the arguments
// of `kernfsim mount` (the mountpoint, the lock and tree flags), until ctx
// is cancelled, then unmounts and returns 0; it prints one line to stdout
// once the mount serves. Tests replace it; nil means no server is
// available (serverproc.ErrNoServer).
var serveMain func(ctx context.Context, args []string, stdout, stderr io.Writer) int = mountcmd.Main

// serverCommand is the command that starts a kernfsim server, or nil if
// there is none.
func serverCommand() []string {
	if serveMain == nil {
		return nil
	}
	return selfCommand("__serve")
}

// newServeCmd is the hidden `loadgen __serve MOUNTPOINT ...` that the
// default target runs in a separate process.
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "__serve MOUNTPOINT --lock L [flags]",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if serveMain == nil {
				return serverproc.ErrNoServer
			}
			if code := serveMain(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != cli.ExitOK {
				return &cli.ExitError{Code: code}
			}
			return nil
		},
	}
}

// newWorkerCmd is the hidden `loadgen __worker` that loadgen.Config.Procs
// runs once per worker: the spec on standard input, the start pipe as
// descriptor 3, the report on standard output.
func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "__worker",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := os.NewFile(3, "start")
			defer start.Close()
			return loadgen.ServeWorker(cmd.Context(), os.Stdin, cmd.OutOrStdout(), start)
		},
	}
}
