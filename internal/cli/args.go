package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// MountpointArg accepts exactly one argument, the MOUNTPOINT, and says in
// words what is missing or extra; example is a whole command line.
func MountpointArg(example string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return &UsageError{Err: fmt.Errorf("missing MOUNTPOINT: name the directory, e.g. %s", example)}
		case len(args) > 1:
			return &UsageError{Err: fmt.Errorf("one MOUNTPOINT only, got %d arguments (%q): flags start with --", len(args), args)}
		}
		return nil
	}
}
