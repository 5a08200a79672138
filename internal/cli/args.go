package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// MountpointArg accepts exactly one argument, the MOUNTPOINT, and says in
// words what is missing, extra or empty; example is a whole command line.
func MountpointArg(example string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return &UsageError{Err: fmt.Errorf("missing MOUNTPOINT: name the directory, e.g. %s", example)}
		case len(args) > 1:
			return &UsageError{Err: fmt.Errorf("one MOUNTPOINT only, got %d arguments (%q): flags start with --", len(args), args)}
		case args[0] == "":
			return &UsageError{Err: fmt.Errorf("MOUNTPOINT is empty (\"\"): name the directory, e.g. %s", example)}
		}
		return nil
	}
}

// PathVar defines a string flag naming a file or directory. An empty
// value is refused where it is parsed (a usage error naming the flag):
// "" would otherwise mean the current directory, standard output or the
// default, never what was meant.
func PathVar(fs *pflag.FlagSet, p *string, name, value, usage string) {
	PathVarP(fs, p, name, "", value, usage)
}

// PathVarP is PathVar with a one-letter shorthand.
func PathVarP(fs *pflag.FlagSet, p *string, name, shorthand, value, usage string) {
	*p = value
	fs.VarP((*pathValue)(p), name, shorthand, usage)
}

// pathValue is a PathVar flag; its type is a string's, so the help and
// FlagSet.GetString treat it as one.
type pathValue string

func (v *pathValue) String() string { return string(*v) }
func (v *pathValue) Type() string   { return "string" }

func (v *pathValue) Set(s string) error {
	if s == "" {
		return errors.New("the path is empty: name a file or directory")
	}
	*v = pathValue(s)
	return nil
}
