// Package cli holds what the commands share: the tree flags and how a tree
// is built from them, and the errors that decide exit statuses.
package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// TreeFlags choose and size the tree a command works on; tree, mount and
// cpuinfo share them.
type TreeFlags struct {
	lock  string
	tree  string
	synth kernfsim.SynthConfig // NUMANodes 0 means one per socket
	gp    string
	grace locking.GraceConfig
}

// AddTreeFlags defines the tree flags on fs, defaulting to
// kernfsim.SynthConfig{}.WithDefaults() under rwsem.
func AddTreeFlags(fs *pflag.FlagSet, f *TreeFlags) {
	d := kernfsim.SynthConfig{}.WithDefaults()
	f.lock, f.tree, f.synth.MemBlockSize = "rwsem", "synthetic", d.MemBlockSize
	fs.Var(&choiceValue{&f.lock, locking.Names}, "lock", "lock strategy: "+strings.Join(locking.Names, ", "))
	fs.Var(&treeValue{&f.tree}, "tree", "tree to build: synthetic (host[:DIR] is not yet supported)")
	fs.IntVar(&f.synth.CPUs, "cpus", d.CPUs, "logical CPUs")
	fs.IntVar(&f.synth.Sockets, "sockets", d.Sockets, "CPU sockets (packages)")
	fs.IntVar(&f.synth.ThreadsPerCore, "threads-per-core", d.ThreadsPerCore, "SMT threads per core")
	fs.IntVar(&f.synth.NUMANodes, "numa-nodes", 0, "NUMA nodes (0: one per socket)")
	fs.IntVar(&f.synth.MemBlocks, "mem-blocks", d.MemBlocks, "memory blocks of 128 MiB")
	fs.IntVar(&f.synth.Netdevs, "netdevs", d.Netdevs, "ethernet devices, besides lo")
	fs.IntVar(&f.synth.Disks, "disks", d.Disks, "NVMe disks")
	gps := []string{string(kernfsim.GPNormal), string(kernfsim.GPExpedited), string(kernfsim.GPDeferred)}
	f.gp = gps[0]
	fs.Var(&choiceValue{&f.gp, gps}, "gp", "rcu teardown: normal (wait a grace period), expedited (force one), deferred (queue the teardown and return)")
	fs.DurationVar(&f.grace.Tick, "gp-tick", 4*time.Millisecond, "grace periods begin on this tick (4ms is HZ=250)")
	fs.DurationVar(&f.grace.ExpediteCost, "expedite-cost", 0, "extra fixed cost of each expedited grace period")
	fs.BoolVar(&f.grace.ExpeditedIsNormal, "rcu-normal", false, "expedited grace periods behave as normal ones (rcu_normal=1, PREEMPT_RT)")
}

// config is the synthetic config the flags ask for.
func (f *TreeFlags) config() kernfsim.SynthConfig {
	c := f.synth
	if c.NUMANodes == 0 {
		c.NUMANodes = c.Sockets
	}
	return c
}

// Built is a tree as the commands serve it: the synthetic sysfs plus the
// in-tree ABI (bus/kernfsim, kernel/kernfsim/stats), sealed.
type Built struct {
	Tree  *kernfsim.Tree
	Stats *fusefs.StatsFile // bind it to the FUSE server once there is one
}

// Build makes the tree the flags describe. A flag value out of range is a
// *UsageError naming the flag.
func (f *TreeFlags) Build() (*Built, error) {
	c := f.config()
	if err := c.Validate(); err != nil {
		return nil, &UsageError{Err: flagError(err)}
	}
	if f.grace.Tick <= 0 || f.grace.ExpediteCost < 0 {
		return nil, &UsageError{Err: fmt.Errorf("invalid --gp-tick %v or --expedite-cost %v: the tick must be positive, the cost 0 or more", f.grace.Tick, f.grace.ExpediteCost)}
	}
	s, err := locking.New(f.lock, locking.Options{Grace: f.grace})
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	t := kernfsim.New(s, kernfsim.Options{GP: kernfsim.GPPolicy(f.gp)})
	if err := kernfsim.BuildSynthetic(t, c); err != nil {
		return nil, &RuntimeError{Err: err}
	}
	stats := fusefs.NewStatsFile(t)
	if _, err := kernfsim.AddABI(t, stats); err != nil {
		return nil, &RuntimeError{Err: err}
	}
	t.Seal()
	return &Built{Tree: t, Stats: stats}, nil
}

// Lock is the chosen lock strategy's name.
func (f *TreeFlags) Lock() string { return f.lock }

// LockDetail is the lock's name with its teardown policy under rcu, e.g.
// "rcu gp=deferred tick=4ms".
func (f *TreeFlags) LockDetail() string {
	if f.lock != "rcu" {
		return f.lock
	}
	d := fmt.Sprintf("rcu gp=%s tick=%v", f.gp, f.grace.Tick)
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
	c := f.config()
	return fmt.Sprintf("synthetic sysfs (%d CPUs in %d sockets, %d threads/core, %d NUMA nodes, %d memory blocks, %d netdevs, %d disks)",
		c.CPUs, c.Sockets, c.ThreadsPerCore, c.NUMANodes, c.MemBlocks, c.Netdevs, c.Disks)
}

// configFlags names the flag for each SynthConfig field.
var configFlags = []struct{ field, flag string }{
	{"ThreadsPerCore", "--threads-per-core"}, // before "Sockets" and "CPUs": longest first
	{"NUMANodes", "--numa-nodes"},
	{"MemBlocks", "--mem-blocks"},
	{"Sockets", "--sockets"},
	{"Netdevs", "--netdevs"},
	{"Disks", "--disks"},
	{"CPUs", "--cpus"},
}

// flagError rewords a *kernfsim.ConfigError in terms of flags.
func flagError(err error) error {
	var ce *kernfsim.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	var pairs []string
	flag := ce.Field
	for _, cf := range configFlags {
		pairs = append(pairs, cf.field, cf.flag)
		if cf.field == ce.Field {
			flag = cf.flag
		}
	}
	return fmt.Errorf("invalid value %v for %s: %s", ce.Value, flag, strings.NewReplacer(pairs...).Replace(ce.Valid))
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

// treeValue is --tree: synthetic; host[:DIR] is reserved for mirroring a
// host's /sys.
type treeValue struct{ p *string }

func (v *treeValue) String() string { return *v.p }
func (v *treeValue) Type() string   { return "kind" }

func (v *treeValue) Set(s string) error {
	switch {
	case s == "synthetic":
		*v.p = s
		return nil
	case s == "host" || strings.HasPrefix(s, "host:"):
		return errors.New("host trees are not yet supported; use synthetic")
	}
	return errors.New("valid values are synthetic (host[:DIR] is not yet supported)")
}
