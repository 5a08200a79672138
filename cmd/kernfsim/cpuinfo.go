package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/sysfs"
)

func newCPUInfoCmd() *cobra.Command {
	var f cli.TreeFlags
	cmd := &cobra.Command{
		Use:                   "cpuinfo [tree flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Print a /proc/cpuinfo consistent with the tree",
		Long: `Print a /proc/cpuinfo for the tree's online CPUs, for tools that read one
beside /sys (lscpu --sysroot, hwloc with HWLOC_FSROOT). Each processor's
physical id, siblings, core id, cpu cores and apicid come from the tree's
devices/system/cpu. A synthetic tree's CPUs are an Intel Ice Lake server;
a host mirror's keep the identity (vendor, model, flags) of the first
processor of ROOT/proc/cpuinfo, where DIR is ROOT/sys.`,
		Example: `  kernfsim cpuinfo --cpus 448 --sockets 4 --threads-per-core 2 > root/proc/cpuinfo
  lscpu --sysroot root      # with the tree mounted on root/sys
  kernfsim cpuinfo --tree host`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cpuinfo(&f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cli.AddShapeFlags(cmd.Flags(), &f)
	return cmd
}

// cpuinfo builds the tree and writes its /proc/cpuinfo to out.
func cpuinfo(f *cli.TreeFlags, out, stderr io.Writer) error {
	model, err := cpuModel(f, stderr)
	if err != nil {
		return err
	}
	b, err := f.Build(fusefs.StatsSource)
	if err != nil {
		return err
	}
	if err := sysfs.WriteCPUInfo(out, b.Tree, model); err != nil {
		return &cli.RuntimeError{Err: err}
	}
	return nil
}

// cpuModel is the processor identity for the tree: the synthetic model, or
// for a mirror of ROOT/sys the first processor of ROOT/proc/cpuinfo (the
// synthetic model, with a note, if there is none).
func cpuModel(f *cli.TreeFlags, stderr io.Writer) (sysfs.CPUModel, error) {
	dir, isHost := f.HostDir()
	if !isHost {
		return sysfs.SynthCPUModel, nil
	}
	path := filepath.Join(filepath.Dir(filepath.Clean(dir)), "proc", "cpuinfo")
	r, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "kernfsim: no %s: the CPUs are described as the synthetic model\n", path)
		return sysfs.SynthCPUModel, nil
	}
	if err != nil {
		return nil, &cli.RuntimeError{Err: err}
	}
	defer r.Close()
	m, err := sysfs.ParseCPUModel(r)
	if err != nil {
		return nil, &cli.RuntimeError{Err: fmt.Errorf("%s: %w", path, err)}
	}
	return m, nil
}
