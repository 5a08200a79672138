package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Report prints err and returns the exit status for it. Errors cobra
// makes itself (unknown command, wrong argument count) are usage errors.
func Report(prog string, cmd *cobra.Command, err error, stderr io.Writer) int {
	var rt *RuntimeError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, prog+": interrupted")
		return ExitRuntime
	case errors.As(err, &rt):
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return ExitRuntime
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	if cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ExitUsage
}
