package loadgen

import (
	"testing"

	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// The sys rows' plain ops run SysTimes (default 10 x Times): /sys is fast
// enough that Times would end each worker's loop within a tick.
func TestSysTimes(t *testing.T) {
	cc := CompareConfig{Times: 500}.withDefaults()
	sys := Row{Target: targets.Target{Kind: targets.TargetPath, Dir: "/sys"}}
	for _, tc := range []struct {
		row  Row
		op   string
		want int
	}{{sys, "files", 5000}, {sys, "missing", 5000}, {sys, "hwloc", cc.HwlocTimes}, {sys, "coldplug", 100},
		{Row{Target: targets.Target{Kind: targets.TargetKernfsim}}, "files", 500}, {Row{Target: targets.Target{Kind: targets.TargetSim}}, "files", 10000}} {
		if got := cc.times(&Cell{Row: tc.row, Op: tc.op}); got != tc.want {
			t.Errorf("%s %s: %d ops per worker, want %d", tc.row.Label(), tc.op, got, tc.want)
		}
	}
}
