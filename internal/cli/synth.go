package cli

import "github.com/kernfsim/kernfsim/sysfs"

// Synth is the synthetic tree the flags size, with the defaults of the
// flags not given; a caller that passes the flags on to a server builds
// the same tree with it.
func (f *TreeFlags) Synth() sysfs.SynthConfig { return f.config().WithDefaults() }
