package targets

import (
	"errors"
	"fmt"
	"time"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/sysfs"
)

// TargetKind says what a run's operations are served by.
type TargetKind string

const (
	// TargetSim is the in-process kernfsim walker over a synthetic tree.
	TargetSim TargetKind = "sim"
	// TargetPath is real system calls against any directory.
	TargetPath TargetKind = "path"
	// TargetKernfsim is a kernfsim FUSE mount: Dir if given, else one Run
	// starts with loadgen.Config.Server and removes afterwards.
	TargetKernfsim TargetKind = "kernfsim"
)

// Target is what a run measures.
type Target struct {
	Kind TargetKind
	// Dir is the directory the paths are relative to (TargetPath, and
	// TargetKernfsim once mounted).
	Dir string
	// Lock is the strategy (TargetSim and TargetKernfsim); "" means
	// DefaultLock.
	Lock string
	// ServerTransport is the transport a kernfsim server loadgen starts
	// is asked for (auto, devfuse, uring); "" leaves the server's default.
	// What the server got is Transport().
	ServerTransport string
	// Tree sizes the synthetic tree (TargetSim; a zero field takes the
	// kernfsim default, so the zero value is a 64-CPU, 2-socket server).
	Tree sysfs.SynthConfig
	// Cred is the workers' identity under TargetSim; nil means
	// DefaultSimCred.
	Cred *kernfsim.Cred
	// SimCost is CPU work each operation of a TargetSim does outside the
	// tree's lock, for what the kernel does around kernfs (syscall entry,
	// file allocation, the VFS walk): a calibrated spin loop, not a
	// sleep (loadgen.CalibrateSimCost). 0 is the bare sim.
	// A sim with SimCost also makes the kernel's shared writes
	// (SimShared).
	SimCost time.Duration
	// SimShared makes a TargetSim's operations write what the kernel
	// writes outside kernfs's lock on lines every worker shares: ref-walk's
	// dentry references and inode refreshes (kernfsim.WalkerOptions.RefWalk,
	// on a tree mounted at /sys), and what the workers share as threads
	// of one process: the descriptor table (an fd taken and given back
	// under its lock by every open) and the credentials (each open's file
	// holds a reference), which loadgen's simProcess models. It is on
	// whenever SimCost is not 0; alone, it is what
	// loadgen.CalibrateSimCost measures the sim's own part with.
	SimShared bool
	// Build, if not nil, builds the TargetSim tree instead of
	// sysfs.NewSynthetic(Tree): a host mirror, or a tree with its own
	// teardown policy (cmd/loadgen passes kernfsim's tree flags this way).
	// Tree is then read only by reports (its CPUs, if not 0).
	Build TreeBuilder
	// Mount is how the server loadgen.Run or Compare started for a
	// TargetKernfsim serves it (from its status line); nil for other
	// targets.
	Mount *serverproc.Mount
}

// TreeBuilder builds the tree of a TargetSim. It is an interface, not a
// func, so that a Target stays comparable.
type TreeBuilder interface {
	// BuildTree returns a sealed tree under the lock strategy lock. A tree
	// no run changes for good (a host mirror) may be returned to several
	// runs.
	BuildTree(lock string) (*kernfsim.Tree, error)
	// String names the tree in reports: "synthetic tree of 64 CPUs",
	// "mirror of /sys".
	String() string
}

// SimSharedWrites reports whether t's operations make the kernel's shared
// writes outside kernfs's lock (Target.SimShared).
func (t Target) SimSharedWrites() bool { return t.Kind == TargetSim && (t.SimShared || t.SimCost > 0) }

// Label is the target's name in benchmark keys and tables: sim,
// kernfsim, sys for /sys, path for another directory.
func (t Target) Label() string {
	if t.Kind == TargetPath && (t.Dir == "/sys" || t.Dir == "/sys/") {
		return "sys"
	}
	if t.Kind == TargetKernfsim && t.ServerTransport != "" {
		return string(t.Kind) + "-" + t.ServerTransport
	}
	return string(t.Kind)
}

// TreeName names a sim target's tree: "synthetic tree of 64 CPUs",
// "mirror of /sys".
func (t Target) TreeName() string {
	if t.Build != nil {
		return t.Build.String()
	}
	return fmt.Sprintf("synthetic tree of %d CPUs", t.Tree.WithDefaults().CPUs)
}

// Transport is how t's operations reach the tree: what its server said
// (DefaultTransport when it did not say), or "none" for the in-process
// walker and for a directory loadgen did not mount.
func (t Target) Transport() string {
	if t.Mount != nil {
		return t.Mount.Transport
	}
	return "none"
}

// Describe is the target's kind, lock, transport, permission mode and
// timeouts, key=value, for headers.
func (t Target) Describe() string {
	lock := t.Lock
	if t.Kind == TargetPath {
		lock = ""
	}
	if t.Mount != nil {
		lock = t.Mount.Lock
	}
	s := t.Label()
	if lock != "" {
		s += " lock=" + lock
	}
	s += " " + t.setup(true)
	switch {
	case t.Kind == TargetSim && t.SimCost == 0 && t.SimSharedWrites():
		s += " sim=shared"
	case t.Kind == TargetSim && t.SimCost == 0:
		s += " sim=bare"
	case t.Kind == TargetSim:
		s += " sim-cost=" + t.SimCost.String() + " shared"
	}
	return s
}

// Setup is Describe without the kind and the lock: what the rows of one
// kind share in a comparison. Where each row's lock decides how missing
// names are cached, it says negatives=lock and not the row's timeout;
// Negatives gives each row's.
func (t Target) Setup() string { return t.setup(false) }

// setup is Setup, with the row's own rule for missing names if own.
func (t Target) setup(own bool) string {
	s := "transport=" + t.Transport()
	switch m := t.Mount; {
	case m != nil:
		s += " permissions=" + m.Permissions + " entry-timeout=" + m.EntryTimeout.String() +
			" attr-timeout=" + m.AttrTimeout.String()
		switch {
		case m.NegativesFromLock() && !own:
			s += " negatives=lock"
		case m.Negatives != "":
			s += " negative-timeout=" + m.NegativeTimeout.String() + " negatives=" + m.Negatives
		default:
			s += " negative-timeout=" + m.NegativeTimeout.String()
		}
	case t.Kind == TargetSim:
		s += " permissions=walker"
	}
	return s
}

// DefaultSimCred is the identity TargetSim workers use: an unprivileged user,
// like someone running the benchmark, so that every permission check takes
// the owner/group/other path rather than root's bypass.
var DefaultSimCred = kernfsim.Cred{Uid: 1000, Gid: 1000}

// NewAssembleError is a *ConfigError for a tree sysfs.Assemble could not
// build: its Lock, or else its Tree.
func NewAssembleError(err error) error {
	if oe := (*sysfs.OptionError)(nil); errors.As(err, &oe) && oe.Option == "Lock" {
		return &setting.Error{Field: "Lock", Problem: err.Error()}
	}
	return &setting.Error{Field: "Tree", Problem: err.Error()}
}
