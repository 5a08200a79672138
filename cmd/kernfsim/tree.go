package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// treeFlags choose and size the tree a command works on; tree, mount and
// cpuinfo share them.
type treeFlags struct {
	lock  string
	tree  string
	synth kernfsim.SynthConfig // NUMANodes 0 means one per socket
}

// addTreeFlags defines the tree flags on fs, defaulting to
// kernfsim.SynthConfig{}.WithDefaults() under rwsem.
func addTreeFlags(fs *pflag.FlagSet, f *treeFlags) {
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
}

// config is the synthetic config the flags ask for.
func (f *treeFlags) config() kernfsim.SynthConfig {
	c := f.synth
	if c.NUMANodes == 0 {
		c.NUMANodes = c.Sockets
	}
	return c
}

// build makes the tree the flags describe. A flag value out of range is a
// *usageError naming the flag.
func (f *treeFlags) build() (*kernfsim.Tree, error) {
	c := f.config()
	if err := c.Validate(); err != nil {
		return nil, &usageError{flagError(err)}
	}
	s, err := locking.New(f.lock, locking.Options{})
	if err != nil {
		return nil, &usageError{err}
	}
	t, err := kernfsim.NewSynthetic(s, c)
	if err != nil {
		return nil, &runtimeError{err}
	}
	return t, nil
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

func newTreeCmd() *cobra.Command {
	var f treeFlags
	cmd := &cobra.Command{
		Use:                   "tree [tree flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Print every node of the tree, like find",
		Long: `Print every node of the tree, one per line, depth first in name order:
its type (d directory, f attribute file, l symlink), its mode and its path;
a symlink also shows its target.`,
		Example: `  kernfsim tree
  kernfsim tree --cpus 8 --sockets 1 --mem-blocks 4 | grep topology/
  kernfsim tree --cpus 448 --sockets 4 --threads-per-core 4 --lock rcu | wc -l`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := f.build()
			if err != nil {
				return err
			}
			if err := printTree(cmd.Context(), cmd.OutOrStdout(), t); err != nil {
				return &runtimeError{err}
			}
			return nil
		},
	}
	addTreeFlags(cmd.Flags(), &f)
	return cmd
}

// printTree writes every node of t below the root to out, depth first,
// each directory's entries in name order.
func printTree(ctx context.Context, out io.Writer, t *kernfsim.Tree) error {
	w := bufio.NewWriter(out)
	if err := printDir(ctx, w, t, t.Root(), ""); err != nil {
		return err
	}
	return w.Flush()
}

func printDir(ctx context.Context, w *bufio.Writer, t *kernfsim.Tree, dir *kernfsim.Node, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var names []string
	if err := t.Readdir(dir, 0, func(d kernfsim.Dirent) bool { names = append(names, d.Name); return true }); err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		n, err := t.Lookup(dir, name)
		if err != nil {
			return err
		}
		p := path + name
		if err := printNode(w, t, n, p); err != nil {
			return err
		}
		if n.Kind() == kernfsim.KindDir {
			if err := printDir(ctx, w, t, n, p+"/"); err != nil {
				return err
			}
		}
	}
	return nil
}

// printNode writes one line: "d 0755 devices", "f 0444 .../core_id",
// "l 0777 class/net/lo -> ../../devices/virtual/net/lo".
func printNode(w *bufio.Writer, t *kernfsim.Tree, n *kernfsim.Node, path string) error {
	st := t.Getattr(n)
	kind := map[kernfsim.Kind]byte{kernfsim.KindDir: 'd', kernfsim.KindAttr: 'f', kernfsim.KindSymlink: 'l'}[n.Kind()]
	_, err := fmt.Fprintf(w, "%c %04o %s", kind, uint32(st.Mode.Perm()), path)
	if err == nil && n.Kind() == kernfsim.KindSymlink {
		_, err = fmt.Fprintf(w, " -> %s", n.Target())
	}
	if err == nil {
		err = w.WriteByte('\n')
	}
	return err
}
