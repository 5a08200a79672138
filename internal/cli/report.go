package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Report prints err and returns the exit status for it: 0 for none, the
// code of an *ExitError (already reported), 1 for an interruption or a
// *RuntimeError, 2 for an *InputError and for anything else, which is a
// usage error followed by a pointer to cmd's --help. Errors cobra makes
// itself (unknown command, wrong argument count) are usage errors.
func Report(prog string, cmd *cobra.Command, err error, stderr io.Writer) int {
	var (
		rt   *RuntimeError
		in   *InputError
		exit *ExitError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &exit):
		return exit.Code
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, prog+": interrupted")
		return ExitRuntime
	case errors.As(err, &rt):
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return ExitRuntime
	case errors.As(err, &in):
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	if cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ExitUsage
}
