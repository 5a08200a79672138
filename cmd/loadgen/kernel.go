package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/kernelprobe"
)

// kernelFlags are the flags of umount-storm and unshare.
type kernelFlags struct {
	cfg    kernelprobe.Config
	format string
	out    string
}

func newUmountStormCmd() *cobra.Command {
	f := &kernelFlags{cfg: kernelprobe.Config{Op: kernelprobe.UmountStorm}}
	cmd := &cobra.Command{
		Use:   "umount-storm [--count N] [--lazy]",
		Short: "Mount N tmpfs in a private mount namespace, then unmount each: the real kernel's grace period per umount (root)",
		Long: `umount-storm reproduces seed 000 on this kernel: mount --count tmpfs under a
fresh directory, then umount2 each (MNT_DETACH with --lazy, seed 001), timing
every call. It runs in a child process started in a private mount namespace
(CLONE_NEWNS, / made private), on a tmpfs over $TMPDIR there, so nothing can
reach the host's mount table, even if loadgen is killed: the namespace dies
with the child, and the child dies with loadgen. Afterwards loadgen checks
that its own mount table is unchanged. It prints the kernel release and the
rcupdate parameters that choose normal or expedited grace periods, and the
seeds' figures. Root only.`,
		Example: `  sudo loadgen umount-storm
  sudo loadgen umount-storm --count 5000 --lazy
  sudo loadgen umount-storm --format bench`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fs := cmd.Flags()
	fs.IntVar(&f.cfg.Count, "count", 5000, "tmpfs to mount, then unmount (the seed's 5000)")
	fs.BoolVar(&f.cfg.Lazy, "lazy", false, "unmount with MNT_DETACH (umount -l)")
	f.addOutput(cmd)
	return cmd
}

func newUnshareCmd() *cobra.Command {
	f := &kernelFlags{cfg: kernelprobe.Config{Op: kernelprobe.Unshare}}
	cmd := &cobra.Command{
		Use:   "unshare [--ns ipc|net|mnt|uts|pid] [--count N]",
		Short: "unshare(2) a namespace N times in a child process: wall and system time per iteration (root)",
		Long: `unshare reproduces seed 003 on this kernel: a child process unshares the
namespace --count times on one thread (each unshare frees the namespace the
previous one made), timing every call, with the wall, system and user time
of the loop. unshare(CLONE_NEWPID) only moves later children into the new
namespace and fails again until one has entered it, so --ns pid forks
true(1) into a new pid namespace per iteration instead, and then runs the
same loop without the flag as a baseline. It prints the kernel release, the
rcupdate parameters and the seeds' figures. Root only.`,
		Example: `  sudo loadgen unshare --ns ipc --count 1000
  sudo loadgen unshare --ns net --count 200 --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.cfg.NS, "ns", "ipc", "namespace: "+strings.Join(kernelprobe.UnshareNamespaces, ", "))
	fs.IntVar(&f.cfg.Count, "count", 1000, "unshares (the seed's 1000)")
	f.addOutput(cmd)
	return cmd
}

func (f *kernelFlags) addOutput(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.format, "format", "seed", "output: seed (text), json or bench")
	cli.PathVar(cmd.Flags(), &f.out, "out", "", "write the output to `FILE` instead of standard output")
}

// newKernelChildCmd is the hidden `loadgen __kernel` that umount-storm and
// unshare run in a child process: the spec on standard input, the report
// on standard output.
func newKernelChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "__kernel",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return kernelprobe.Serve(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}

func (f *kernelFlags) validate(cmd *cobra.Command) error {
	if err := positive(cmd.Flags(), "count"); err != nil {
		return err
	}
	if f.cfg.Op == kernelprobe.Unshare && !slices.Contains(kernelprobe.UnshareNamespaces, f.cfg.NS) {
		return &cli.UsageError{Err: fmt.Errorf("--ns %q: valid namespaces are %s", f.cfg.NS, strings.Join(kernelprobe.UnshareNamespaces, ", "))}
	}
	switch f.format {
	case "seed", "json", "bench":
		return nil
	}
	return &cli.UsageError{Err: fmt.Errorf("--format %q: valid formats are seed, json and bench", f.format)}
}

func (f *kernelFlags) run(cmd *cobra.Command) error {
	if err := f.validate(cmd); err != nil {
		return err
	}
	f.cfg.Command = selfCommand("__kernel")
	w, closeOut, err := openOut(f.out, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	res, err := kernelprobe.Run(cmd.Context(), f.cfg)
	var ce *setting.Error
	if err != nil && !errors.As(err, &ce) && (res.Mount != nil || res.Unshare != nil) {
		err = errors.Join(err, f.write(w, res))
	} else if err == nil {
		err = f.write(w, res)
	}
	return errors.Join(err, closeOut())
}

func (f *kernelFlags) write(w io.Writer, res kernelprobe.Result) error {
	return writerFor(f.format, kernelprobe.Write, kernelprobe.WriteJSON, kernelprobe.WriteBench)(w, res)
}
