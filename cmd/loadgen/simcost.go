package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
)

// simCostFlags are --sim-cost and --calibrate, of a run and of compare.
type simCostFlags struct {
	cost      simCostValue
	calibrate string
}

// simCostValue is --sim-cost: a duration (0 is the bare sim) or auto.
type simCostValue struct {
	auto bool
	d    time.Duration
}

func (v *simCostValue) String() string {
	if v.auto {
		return "auto"
	}
	return v.d.String()
}

func (v *simCostValue) Set(s string) error {
	if s == "auto" {
		*v = simCostValue{auto: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return fmt.Errorf("give a duration such as 5us, 0 for the bare sim, or auto to calibrate against --calibrate")
	case d < 0 || d > time.Second:
		return fmt.Errorf("%v: give the kernel's work per operation, 0 to a few microseconds", d)
	}
	*v = simCostValue{d: d}
	return nil
}

func (v *simCostValue) Type() string { return "DURATION|auto" }

func addSimCostFlags(fs *pflag.FlagSet, f *simCostFlags) {
	fs.Var(&f.cost, "sim-cost", "CPU work each sim operation does outside the lock, for the kernel's syscall entry, file "+
		"allocation and VFS walk (a calibrated spin loop), plus the writes every worker shares (ref-walk's dentry references "+
		"and inode refreshes, the descriptor table): a duration, 0 for the bare sim, or auto: the op's single-thread per-op against --calibrate less the "+
		"sim's own with those writes (rwsem)")
	cli.PathVar(fs, &f.calibrate, "calibrate", "/sys", "the directory --sim-cost auto calibrates against")
}

// check rejects the flags where no sim runs.
func (f *simCostFlags) check(cmd *cobra.Command, sim bool) error {
	fs := cmd.Flags()
	switch {
	case !sim && (fs.Changed("sim-cost") || fs.Changed("calibrate")):
		return &cli.UsageError{Err: errors.New("--sim-cost and --calibrate apply to the sim (--sim, or --targets with sim)")}
	case fs.Changed("calibrate") && !f.cost.auto:
		return &cli.UsageError{Err: errors.New("--calibrate is what --sim-cost auto measures: add --sim-cost auto")}
	}
	return nil
}

// apply sets cfg's SimCost from the flags, calibrating it first for
// auto and printing the calibration on stderr.
func (f *simCostFlags) apply(cmd *cobra.Command, cfg *loadgen.Config, stderr io.Writer) error {
	if !f.cost.auto {
		cfg.Target.SimCost = f.cost.d // a cost makes the shared writes too (Target.SimShared)
		return nil
	}
	fmt.Fprintf(stderr, "loadgen: calibrating the sim's cost against %s...\n", f.calibrate)
	cal, err := loadgen.CalibrateSimCost(cmd.Context(), *cfg, f.calibrate, serverproc.DefaultLock)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "loadgen: calibration: %s\n", cal)
	cfg.Target.SimCost, cfg.Target.SimShared, cfg.SimCalibration = cal.Cost, true, &cal
	return nil
}
