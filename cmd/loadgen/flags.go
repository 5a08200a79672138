package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// treeFlags are kernfsim's own tree flags (internal/cli.TreeFlags). They
// build the sim's tree (BuildWith the run's lock) and are passed as given
// to the kernfsim servers loadgen starts (cli.Args), so both serve the
// same tree; a flag not given keeps kernfsim's default, a 64-CPU, 2-socket
// server. The lock is each command's own (one lock, or a list).
type treeFlags struct {
	cli.TreeFlags
	fs    *pflag.FlagSet
	names map[string]bool // the tree flags fs took from cli

	mu      sync.Mutex                // protects mirrors
	mirrors map[string]*kernfsim.Tree // host mirrors by lock; protected by mu
}

var _ targets.TreeBuilder = (*treeFlags)(nil)

// addTreeFlags adds to fs every tree flag but the lock's that fs does not
// define already (teardown has its own list of grace-period policies):
// define the command's own flags first.
func addTreeFlags(fs *pflag.FlagSet, f *treeFlags) {
	own := pflag.NewFlagSet("tree", pflag.ContinueOnError)
	cli.AddTreeFlags(own, &f.TreeFlags)
	f.fs, f.names = fs, map[string]bool{}
	own.VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "cgroups" {
			fl.Usage += fmt.Sprintf("; --op cgroup makes %d unless given", loadgen.DefaultCgroups)
		}
		if fl.Name != "lock" && fs.Lookup(fl.Name) == nil {
			fs.AddFlag(fl) // the same *Flag: own.Changed sees what fs parsed
			f.names[fl.Name] = true
		}
	})
}

// validate checks the tree flags; a bad value is a usage error naming the
// flag.
func (f *treeFlags) validate() error { return cliError(f.Validate()) }

// defaultCgroups gives a synthetic tree loadgen.DefaultCgroups containers
// when one of ops reads cgroups and no container count was given, so that
// the sim and the servers loadgen starts have a hierarchy to read.
func (f *treeFlags) defaultCgroups(ops []string) error {
	if f.Saved() || !slices.Contains(ops, string(workload.OpCgroup)) || !f.names["cgroups"] || f.fs.Changed("cgroups") {
		return nil
	}
	return f.fs.Set("cgroups", strconv.Itoa(loadgen.DefaultCgroups))
}

// given are the names of the tree flags given (but the lock's), in
// cli.TreeFlagNames' order.
func (f *treeFlags) given() []string {
	var names []string
	for _, n := range cli.TreeFlagNames {
		if f.names[n] && f.fs.Changed(n) {
			names = append(names, n)
		}
	}
	return names
}

// given is the first of the named flags set on the command line, or "".
func given(fs *pflag.FlagSet, names ...string) string {
	for _, n := range names {
		if fs.Changed(n) {
			return n
		}
	}
	return ""
}

// serverArgs are the tree flags given, for a server's command line.
func (f *treeFlags) serverArgs() []string {
	var args []string
	for _, a := range cli.Args(f.fs) {
		if name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "="); f.names[name] {
			args = append(args, a)
		}
	}
	return args
}

// config is the synthetic tree the flags size (cli.TreeFlags.Synth).
func (f *treeFlags) config() sysfs.SynthConfig { return f.Synth() }

// simTarget is the sim target under lock, its tree built from the flags.
func (f *treeFlags) simTarget(lock string) targets.Target {
	t := targets.Target{Kind: targets.TargetSim, Lock: lock, Build: f}
	if !f.Saved() {
		t.Tree = f.config() // for reports
	}
	return t
}

// BuildTree builds the tree under lock (targets.TreeBuilder). A host
// mirror is loaded once per lock and given to every run: no run changes
// it for good (churned devices are removed again, and a mirror has no
// memory probe to hot-add through), and loading one takes longer than
// most runs.
func (f *treeFlags) BuildTree(lock string) (*kernfsim.Tree, error) {
	host := f.Saved() // a host mirror or an archive
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.mirrors[lock]; host && t != nil {
		return t, nil
	}
	b, err := f.BuildWith(lock, fusefs.StatsSource)
	if ue, ie := (*cli.UsageError)(nil), (*cli.InputError)(nil); errors.As(err, &ue) || errors.As(err, &ie) {
		return nil, &setting.Error{Field: "Tree", Problem: err.Error()}
	} else if err != nil {
		return nil, err
	}
	if host {
		if f.mirrors == nil {
			f.mirrors = map[string]*kernfsim.Tree{}
		}
		f.mirrors[lock] = b.Tree
	}
	return b.Tree, nil
}

// String names the tree in reports.
func (f *treeFlags) String() string {
	if f.Saved() {
		return f.Describe()
	}
	return fmt.Sprintf("synthetic tree of %d CPUs", f.config().CPUs)
}

// cliError turns internal/cli's errors into this command's: a
// *cli.UsageError is bad input (exit 2).
func cliError(err error) error {
	var ue *cli.UsageError
	if errors.As(err, &ue) {
		return &cli.UsageError{Err: ue.Err}
	}
	return err
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

// transportValue is --transport: one of uring.Kinds, checked even
// where no server is started.
type transportValue struct{ p *string }

func (v transportValue) String() string { return *v.p }
func (v transportValue) Type() string   { return "string" }

func (v transportValue) Set(s string) error {
	if _, err := uring.ParseKind(s); err != nil {
		return fmt.Errorf("valid transports are %s", transportList())
	}
	*v.p = s
	return nil
}

// transportList is uring.Kinds, for help and errors.
func transportList() string {
	names := make([]string, len(uring.Kinds))
	for i, k := range uring.Kinds {
		names[i] = k.String()
	}
	return strings.Join(names, ", ")
}

// positive checks that each named int flag, if given, is at least 1.
func positive(fs *pflag.FlagSet, names ...string) error {
	for _, n := range names {
		if !fs.Changed(n) {
			continue
		}
		if v, err := strconv.Atoi(fs.Lookup(n).Value.String()); err == nil && v <= 0 {
			return &cli.UsageError{Err: fmt.Errorf("--%s must be at least 1, got %d", n, v)}
		}
	}
	return nil
}

// notNegative checks that each duration flag (by name) is 0 or more.
func notNegative(flags map[string]time.Duration) error {
	for _, n := range slices.Sorted(maps.Keys(flags)) {
		if d := flags[n]; d < 0 {
			return &cli.UsageError{Err: fmt.Errorf("--%s must be 0 or more, got %v", n, d)}
		}
	}
	return nil
}

// openOut opens the output file path, or returns stdout; close closes
// the file.
func openOut(path string, stdout io.Writer) (w io.Writer, close func() error, err error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, &cli.UsageError{Err: fmt.Errorf("--out: %w", err)}
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
