package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// treeFlags size the synthetic tree of --sim and of the kernfsim server
// loadgen starts. They are kernfsim's own tree flags; a flag not given
// keeps kernfsim's default (a 64-CPU, 2-socket server), so --sim and the
// server build the same tree.
type treeFlags struct {
	fs    *pflag.FlagSet
	synth kernfsim.SynthConfig
}

// treeFlagNames are the tree flags, in the order they are forwarded:
// longest SynthConfig field name first, for rewording errors.
var treeFlagNames = []string{"threads-per-core", "numa-nodes", "mem-blocks", "sockets", "netdevs", "disks", "cpus"}

// fieldOf is the SynthConfig field of a tree flag.
func fieldOf(flag string) string {
	return map[string]string{"threads-per-core": "ThreadsPerCore", "numa-nodes": "NUMANodes", "mem-blocks": "MemBlocks",
		"sockets": "Sockets", "netdevs": "Netdevs", "disks": "Disks", "cpus": "CPUs"}[flag]
}

func addTreeFlags(fs *pflag.FlagSet, f *treeFlags) {
	d := kernfsim.SynthConfig{}.WithDefaults()
	f.fs = fs
	fs.IntVar(&f.synth.CPUs, "cpus", d.CPUs, "tree: logical CPUs")
	fs.IntVar(&f.synth.Sockets, "sockets", d.Sockets, "tree: CPU sockets")
	fs.IntVar(&f.synth.ThreadsPerCore, "threads-per-core", d.ThreadsPerCore, "tree: SMT threads per core")
	fs.IntVar(&f.synth.NUMANodes, "numa-nodes", 0, "tree: NUMA nodes (0: one per socket)")
	fs.IntVar(&f.synth.MemBlocks, "mem-blocks", d.MemBlocks, "tree: memory blocks of 128 MiB")
	fs.IntVar(&f.synth.Netdevs, "netdevs", d.Netdevs, "tree: ethernet devices, besides lo")
	fs.IntVar(&f.synth.Disks, "disks", d.Disks, "tree: NVMe disks")
}

// config is the SynthConfig of the flags given; the rest stay zero, which
// WithDefaults fills in.
func (f *treeFlags) config() kernfsim.SynthConfig {
	c := f.synth
	for _, z := range []struct {
		name string
		v    *int
	}{{"cpus", &c.CPUs}, {"sockets", &c.Sockets}, {"threads-per-core", &c.ThreadsPerCore},
		{"mem-blocks", &c.MemBlocks}, {"netdevs", &c.Netdevs}, {"disks", &c.Disks}} {
		if !f.fs.Changed(z.name) {
			*z.v = 0
		}
	}
	return c
}

// validate checks the tree the flags describe, naming the flag at fault.
func (f *treeFlags) validate() error {
	err := f.config().WithDefaults().Validate()
	ce, ok := err.(*kernfsim.ConfigError)
	if !ok {
		return err
	}
	var pairs []string
	flag := ce.Field
	for _, n := range treeFlagNames { // longest field names first: ThreadsPerCore before CPUs
		field := fieldOf(n)
		if field == ce.Field {
			flag = "--" + n
		}
		pairs = append(pairs, field, "--"+n)
	}
	return &usageError{fmt.Errorf("invalid value %v for %s: %s", ce.Value, flag, strings.NewReplacer(pairs...).Replace(ce.Valid))}
}

// serverArgs are the tree flags given, for the server's command line.
func (f *treeFlags) serverArgs() []string {
	var args []string
	for _, n := range treeFlagNames {
		if f.fs.Changed(n) {
			args = append(args, "--"+n+"="+f.fs.Lookup(n).Value.String())
		}
	}
	return args
}

// lockValue is --lock: one of locking.Names.
type lockValue struct{ p *string }

func (v lockValue) String() string { return *v.p }
func (v lockValue) Type() string   { return "name" }

func (v lockValue) Set(s string) error {
	if !slices.Contains(locking.Names, s) {
		return fmt.Errorf("valid strategies are %s", strings.Join(locking.Names, ", "))
	}
	*v.p = s
	return nil
}

// positive checks that each named int flag, if given, is at least 1.
func positive(fs *pflag.FlagSet, names ...string) error {
	for _, n := range names {
		if !fs.Changed(n) {
			continue
		}
		if v, err := strconv.Atoi(fs.Lookup(n).Value.String()); err == nil && v <= 0 {
			return &usageError{fmt.Errorf("--%s must be at least 1, got %d", n, v)}
		}
	}
	return nil
}

// openOut opens --out FILE, or returns stdout; close closes the file.
func openOut(path string, stdout io.Writer) (w io.Writer, close func() error, err error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, &usageError{fmt.Errorf("--out: %w", err)}
	}
	return f, f.Close, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progressLine rewrites one status line on a terminal; on anything else it
// writes nothing.
type progressLine struct {
	w     io.Writer
	on    bool
	shown bool
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w, on: isTerminal(w)} }

func (p *progressLine) set(format string, args ...any) {
	if p.on {
		fmt.Fprintf(p.w, "\r\033[K"+format, args...)
		p.shown = true
	}
}

func (p *progressLine) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

func roundDur(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
