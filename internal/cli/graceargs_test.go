package cli

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/locking"
)

// TestGraceArgs: the tree flags parse what client.GraceArgs writes back
// into the same policy and engine.
func TestGraceArgs(t *testing.T) {
	for _, c := range []struct {
		gp   string
		g    locking.GraceConfig
		want string
	}{
		{"deferred", locking.GraceConfig{}, "rcu gp=deferred tick=4ms"},
		{"expedited", locking.GraceConfig{Tick: 2 * time.Millisecond, ExpediteCost: time.Microsecond, ExpeditedIsNormal: true},
			"rcu gp=expedited tick=2ms expedite-cost=1µs rcu-normal"},
	} {
		var f TreeFlags
		fs := pflag.NewFlagSet("mount", pflag.ContinueOnError)
		AddTreeFlags(fs, &f)
		if err := fs.Parse(append([]string{"--lock=rcu"}, client.GraceArgs(c.gp, c.g)...)); err != nil {
			t.Fatalf("%v: %v", client.GraceArgs(c.gp, c.g), err)
		}
		if got := f.LockDetail(); got != c.want {
			t.Errorf("%v: LockDetail %q, want %q", client.GraceArgs(c.gp, c.g), got, c.want)
		}
	}
}
