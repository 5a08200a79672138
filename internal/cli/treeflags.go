// Package cli holds what the commands share: the tree flags and the exit statuses.
//
// It builds a tree from the tree flags, and its errors decide a
// command's exit status.
package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// TreeFlags choose and size the tree a command works on; tree, mount and
// cpuinfo share them.
type TreeFlags struct {
	lock    string
	tree    string            // "synthetic", "host" or "archive"
	hostDir string            // --tree host[:DIR]: the directory mirrored; --tree archive:FILE: the file
	synth   sysfs.SynthConfig // NUMANodes 0 means one per socket
	gp      string
	grace   locking.GraceConfig
	delay   time.Duration  // --lock-delay: locking.Options.HoldDelay
	flags   *pflag.FlagSet // to tell which flags were given
}

// AddTreeFlags defines the tree flags on fs, the shape and the lock,
// defaulting to sysfs.SynthConfig{}.WithDefaults() under rwsem.
func AddTreeFlags(fs *pflag.FlagSet, f *TreeFlags) {
	AddShapeFlags(fs, f)
	addLockFlags(fs, f)
}

// AddShapeFlags defines only the flags that choose and size the tree, for
// commands whose output the lock does not change (tree, cpuinfo); the tree
// is then built under rwsem.
func AddShapeFlags(fs *pflag.FlagSet, f *TreeFlags) {
	d := sysfs.SynthConfig{}.WithDefaults()
	f.lock, f.tree, f.synth.MemBlockSize, f.flags = "rwsem", "synthetic", d.MemBlockSize, fs
	f.gp, f.grace.Tick = string(kernfsim.GPNormal), 4*time.Millisecond
	fs.Var(&treeValue{&f.tree, &f.hostDir}, "tree", "tree to build: synthetic, host[:DIR] to snapshot DIR (/sys if none is given), or archive:FILE to serve a tar (.tar, .tar.gz, .tar.bz2, .tar.xz) of a /sys, such as hwloc-gather-topology's")
	fs.IntVar(&f.synth.CPUs, "cpus", d.CPUs, "logical CPUs")
	fs.IntVar(&f.synth.Sockets, "sockets", d.Sockets, "CPU sockets, or packages")
	fs.IntVar(&f.synth.ThreadsPerCore, "threads-per-core", d.ThreadsPerCore, "SMT threads per core")
	fs.IntVar(&f.synth.NUMANodes, "numa-nodes", 0, "NUMA nodes (0: one per socket)")
	fs.IntVar(&f.synth.MemBlocks, "mem-blocks", d.MemBlocks, "memory blocks of 128 MiB")
	fs.IntVar(&f.synth.Netdevs, "netdevs", d.Netdevs, "ethernet devices, besides lo")
	fs.IntVar(&f.synth.Disks, "disks", d.Disks, "NVMe disks")
	fs.IntVar(&f.synth.Cgroups, "cgroups", d.Cgroups, "containers in a Kubernetes node's cgroup v2 hierarchy under fs/cgroup, two to a pod (0: none, fs/cgroup empty as in a sysfs)")
}

// addLockFlags defines the lock strategy and its grace-period flags.
func addLockFlags(fs *pflag.FlagSet, f *TreeFlags) {
	fs.Var(&choiceValue{&f.lock, locking.Names}, "lock", "lock strategy: "+strings.Join(locking.Names, ", "))
	gps := []string{string(kernfsim.GPNormal), string(kernfsim.GPExpedited), string(kernfsim.GPDeferred)}
	fs.Var(&choiceValue{&f.gp, gps}, "gp", "teardown under grace periods (rcu, percpu): normal waits a grace period, expedited forces one (and percpu's writers expedite theirs), deferred queues the teardown and returns")
	fs.DurationVar(&f.grace.Tick, "gp-tick", f.grace.Tick, "grace periods begin on this tick; 4ms is HZ=250")
	fs.DurationVar(&f.grace.ExpediteCost, "expedite-cost", 0, "extra fixed cost of each expedited grace period")
	fs.BoolVar(&f.grace.ExpeditedIsNormal, "rcu-normal", false, "expedited grace periods behave as normal ones (rcu_normal=1, PREEMPT_RT)")
	fs.DurationVar(&f.delay, "lock-delay", 0, "lengthen every critical section of the tree lock by a spin of this long, to check where the lock binds (0: none; at most "+
		locking.MaxHoldDelay.String()+")")
}

// config is the synthetic config the flags ask for.
func (f *TreeFlags) config() sysfs.SynthConfig {
	c := f.synth
	if c.NUMANodes == 0 {
		c.NUMANodes = c.Sockets
	}
	return c
}

// Built is a tree as the commands serve it: the synthetic sysfs or a
// host's mirror, plus the in-tree ABI (bus/kernfsim,
// kernel/kernfsim/stats), sealed.
type Built struct {
	Tree *kernfsim.Tree
	// Report says what a host mirror loaded and left out, in a few lines
	// for the user; "" for a synthetic tree.
	Report string
}

// StatsFunc makes the contents of a new tree's kernel/kernfsim/stats:
// the FUSE server's stats file, which fusefs.MountTree binds to its
// server through MountOptions.Stats.
type StatsFunc = func(*kernfsim.Tree) kernfsim.Source

// Build makes the tree the flags describe, its stats file made by stats.
// A flag value out of range is a *UsageError naming the flag.
func (f *TreeFlags) Build(stats StatsFunc) (*Built, error) {
	return f.BuildWith(f.lock, stats)
}

// BuildWith is Build under lock instead of --lock (loadgen compares
// several locks on one set of tree flags).
func (f *TreeFlags) BuildWith(lock string, stats StatsFunc) (*Built, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	a, err := sysfs.Assemble(f.assembly(lock, stats))
	var oe *sysfs.OptionError
	switch {
	case errors.As(err, &oe) && oe.Option == "HostDir":
		return nil, &UsageError{Err: fmt.Errorf("invalid value for --tree: host:%w", oe.Err)}
	case errors.As(err, &oe) && oe.Option == "Archive":
		return nil, &InputError{Err: fmt.Errorf("--tree archive:%w", oe.Err)}
	case errors.As(err, &oe):
		return nil, &UsageError{Err: oe.Err}
	case err != nil:
		return nil, &RuntimeError{Err: err}
	}
	b := &Built{Tree: a.Tree}
	if a.Mirror != nil {
		b.Report = a.Mirror.String()
	}
	if a.Archive != nil {
		b.Report = a.Archive.String()
	}
	return b, nil
}

// assembly is what the flags ask sysfs.Assemble for, under lock.
func (f *TreeFlags) assembly(lock string, stats func(*kernfsim.Tree) kernfsim.Source) sysfs.Options {
	o := sysfs.Options{Lock: lock, Grace: f.grace, GP: kernfsim.GPPolicy(f.gp), LockDelay: f.delay, Synth: f.config(), ABI: true, Stats: stats}
	switch f.tree {
	case "host":
		o.HostDir = f.hostDir
	case "archive":
		o.Archive = f.hostDir
	}
	return o
}

// Args renders the tree flags as they were set, for passing them to a
// kernfsim server loadgen starts (--lock excluded: the caller chooses it).
func Args(fs *pflag.FlagSet) []string {
	var args []string
	fs.Visit(func(fl *pflag.Flag) {
		if fl.Name != "lock" && slices.Contains(TreeFlagNames, fl.Name) {
			args = append(args, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	return args
}

// TreeFlagNames are the flags AddTreeFlags defines.
var TreeFlagNames = []string{"lock", "tree", "cpus", "sockets", "threads-per-core", "numa-nodes", "mem-blocks", "netdevs", "disks", "cgroups", "gp", "gp-tick", "expedite-cost", "rcu-normal", "lock-delay"}

// synthFlags are the flags that size a synthetic tree only.
var synthFlags = []string{"cpus", "sockets", "threads-per-core", "numa-nodes", "mem-blocks", "netdevs", "disks", "cgroups"}

// checkHostDir checks that --tree host:DIR names a directory: a
// *UsageError saying what it is instead.
func checkHostDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return &UsageError{Err: fmt.Errorf("invalid value for --tree: host:%s: %v: give the directory to mirror (a sysfs, or a copy of one)", dir, errors.Unwrap(err))}
	case !st.IsDir():
		return &UsageError{Err: fmt.Errorf("invalid value for --tree: host:%s is a %s, not a directory: give the directory to mirror (a sysfs, or a copy of one)", dir, fileKind(st.Mode()))}
	}
	return nil
}

// fileKind names what a file of mode m is, for a message.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "file"
}

// validate checks the flags' values against each other: a *UsageError
// naming the flag.
func (f *TreeFlags) validate() error {
	if f.tree != "synthetic" {
		for _, name := range synthFlags {
			if f.flags != nil && f.flags.Changed(name) {
				return &UsageError{Err: fmt.Errorf("--%s sizes a synthetic tree; it does not apply to --tree %s", name, f.tree)}
			}
		}
		if err := f.validateSaved(); err != nil {
			return err
		}
	} else if err := f.config().Validate(); err != nil {
		return &UsageError{Err: flagError(err)}
	} else if err := checkMemory(f.config()); err != nil {
		return err
	}
	if f.grace.Tick <= 0 || f.grace.ExpediteCost < 0 {
		return &UsageError{Err: fmt.Errorf("invalid --gp-tick %v or --expedite-cost %v: the tick must be positive, the cost 0 or more", f.grace.Tick, f.grace.ExpediteCost)}
	}
	if f.delay < 0 || f.delay > locking.MaxHoldDelay {
		return &UsageError{Err: fmt.Errorf("invalid --lock-delay %v: give 0 (none) to %v", f.delay, locking.MaxHoldDelay)}
	}
	return nil
}

// validateSaved checks that a host mirror's directory is one, and an
// archive a regular file.
func (f *TreeFlags) validateSaved() error {
	if f.tree == "host" {
		return checkHostDir(f.hostDir)
	}
	st, err := os.Stat(f.hostDir)
	switch {
	case f.tree == "archive" && err != nil:
		return &UsageError{Err: fmt.Errorf("invalid value for --tree: archive:%s cannot be read (%v)", f.hostDir, err)}
	case f.tree == "archive" && !st.Mode().IsRegular():
		return &UsageError{Err: fmt.Errorf("invalid value for --tree: archive:%s is not a regular file (a directory is served with --tree host:DIR)", f.hostDir)}
	}
	return nil
}

// Validate checks the flags without building the tree: a *UsageError
// naming the flag, as Build would return (loadgen checks the tree flags
// it passes on to a server this way).
func (f *TreeFlags) Validate() error { return f.validate() }

// HostDir is the directory --tree host[:DIR] mirrors, and whether the
// tree is a host mirror at all.
func (f *TreeFlags) HostDir() (string, bool) { return f.hostDir, f.tree == "host" }

// Archive is the file --tree archive:FILE serves, and whether the tree
// is an archive at all.
func (f *TreeFlags) Archive() (string, bool) { return f.hostDir, f.tree == "archive" }

// Saved reports whether the tree is a saved machine (a host mirror or an
// archive) rather than a synthetic one.
func (f *TreeFlags) Saved() bool { return f.tree != "synthetic" }

// Lock is the chosen lock strategy's name.
func (f *TreeFlags) Lock() string { return f.lock }

// LockDetail is the lock's name with its teardown policy under rcu, e.g.
// "rcu gp=deferred tick=4ms".
func (f *TreeFlags) LockDetail() string {
	if t, _ := locking.TraitsOf(f.lock); !t.GracePeriods {
		return f.lock
	}
	d := fmt.Sprintf("%s gp=%s tick=%v", f.lock, f.gp, f.grace.Tick)
	if f.grace.ExpediteCost > 0 {
		d += fmt.Sprintf(" expedite-cost=%v", f.grace.ExpediteCost)
	}
	if f.grace.ExpeditedIsNormal {
		d += " rcu-normal"
	}
	return d
}

// Describe names the tree in one phrase, for a status line.
func (f *TreeFlags) Describe() string {
	switch f.tree {
	case "host":
		return "mirror of " + f.hostDir
	case "archive":
		return "archive " + f.hostDir
	}
	c := f.config()
	cgroups := ""
	if c.Cgroups > 0 {
		cgroups = fmt.Sprintf(", %d cgroup containers", c.Cgroups)
	}
	return fmt.Sprintf("synthetic sysfs (%d CPUs in %d sockets, %d threads/core, %d NUMA nodes, %d memory blocks, %d netdevs, %d disks%s)",
		c.CPUs, c.Sockets, c.ThreadsPerCore, c.NUMANodes, c.MemBlocks, c.Netdevs, c.Disks, cgroups)
}

// configFlags names the flag for each SynthConfig field.
var configFlags = setting.Table{
	"ThreadsPerCore": "--threads-per-core",
	"NUMANodes":      "--numa-nodes",
	"MemBlocks":      "--mem-blocks",
	"Sockets":        "--sockets",
	"Netdevs":        "--netdevs",
	"Disks":          "--disks",
	"Cgroups":        "--cgroups",
	"CPUs":           "--cpus",
}

// flagError rewords a *sysfs.ConfigError in terms of flags.
func flagError(err error) error {
	var ce *sysfs.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("invalid value %v for %s: %s", ce.Value, configFlags.Name(ce.Field), configFlags.Put(ce.Valid))
}

// choiceValue is a string flag limited to a list of values.
type choiceValue struct {
	p     *string
	valid []string
}

func (v *choiceValue) String() string { return *v.p }
func (v *choiceValue) Type() string   { return "name" }

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.valid, s) {
		return fmt.Errorf("valid values are %s", strings.Join(v.valid, ", "))
	}
	*v.p = s
	return nil
}

// treeValue is --tree: synthetic, host[:DIR] for a mirror of DIR
// (default /sys), or archive:FILE.
type treeValue struct{ kind, dir *string }

func (v *treeValue) String() string {
	if *v.kind != "synthetic" {
		return *v.kind + ":" + *v.dir
	}
	return *v.kind
}

func (v *treeValue) Type() string { return "kind" }

func (v *treeValue) Set(s string) error {
	dir, isHost := strings.CutPrefix(s, "host:")
	file, isArchive := strings.CutPrefix(s, "archive:")
	switch {
	case isArchive && file != "":
		*v.kind, *v.dir = "archive", file
	case s == "synthetic":
		*v.kind = s
	case s == "host":
		*v.kind, *v.dir = s, "/sys"
	case isHost && dir != "":
		*v.kind, *v.dir = "host", dir
	default:
		return errors.New("valid values are synthetic, host, host:DIR, archive:FILE")
	}
	return nil
}
