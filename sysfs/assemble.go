package sysfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// Options say what tree Assemble builds.
type Options struct {
	Lock  string              // the lock strategy's name (locking.Names)
	Grace locking.GraceConfig // the grace-period engine, where the strategy has one
	GP    kernfsim.GPPolicy   // teardown policy under grace periods; "" means normal; expedited also makes percpu's writers expedite theirs (locking.Options.ExpediteSync)
	// LockDelay lengthens every critical section of the tree lock
	// (locking.Options.HoldDelay); 0 means none.
	LockDelay time.Duration

	// Synth is the synthetic machine, taken as given (start from
	// SynthConfig.WithDefaults). Unused when HostDir or Archive is set.
	Synth SynthConfig
	// HostDir, if set, is a sysfs to mirror (MirrorHost) instead.
	HostDir string
	Mirror  MirrorOptions
	// Archive, if set, is a tar archive of a sysfs to serve
	// (LoadArchive) instead.
	Archive     string
	ArchiveOpts ArchiveOptions

	// ABI adds the in-tree ABI: bus/kernfsim, devices/kernfsim,
	// class/kernfsim and, if Stats is set, kernel/kernfsim/stats.
	ABI bool
	// MaxDevices bounds new_device; 0 means DefaultMaxDevices.
	MaxDevices int
	// Stats, if set, makes the stats file's contents for the new tree.
	// The server that serves the tree binds its counters to the file.
	Stats func(*kernfsim.Tree) kernfsim.Source
}

// Assembled is a tree as the commands and loadgen serve it, sealed.
type Assembled struct {
	Tree   *kernfsim.Tree
	ABI    *ABI          // nil unless Options.ABI
	Mirror *MirrorReport // nil unless Options.HostDir
	// Archive is nil unless Options.Archive.
	Archive *ArchiveReport
}

// OptionError is an option Assemble cannot build from: Option is "Lock",
// "Synth", "HostDir" for a directory that holds entries where the
// in-tree ABI adds its own (Err wraps the *ABIConflictError), or
// "Archive" for an archive that cannot be served or holds such entries
// (Err wraps the *ArchiveError or *ABIConflictError); Err says why. Other
// errors are failures to build.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Assemble builds the tree o describes: a tree under the lock strategy,
// the synthetic machine or the host's mirror, and the in-tree ABI, then
// seals it. Every command and loadgen target builds its tree here, so a
// tree served by `kernfsim mount` and one measured in process are the same.
func Assemble(o Options) (*Assembled, error) {
	s, err := locking.New(o.Lock, locking.Options{Grace: o.Grace, ExpediteSync: o.GP == kernfsim.GPExpedited, HoldDelay: o.LockDelay})
	if err != nil {
		return nil, &OptionError{Option: "Lock", Err: err}
	}
	if o.HostDir == "" && o.Archive == "" {
		if err := o.Synth.Validate(); err != nil {
			return nil, &OptionError{Option: "Synth", Err: err}
		}
	}
	a := &Assembled{Tree: kernfsim.New(s, kernfsim.Options{GP: o.GP})}
	if err := a.populate(o); err != nil {
		return nil, err
	}
	if o.ABI {
		var stats kernfsim.Source
		if o.Stats != nil {
			stats = o.Stats(a.Tree)
		}
		if a.ABI, err = AddABIWith(a.Tree, ABIOptions{Stats: stats, MaxDevices: o.MaxDevices}); err != nil {
			return nil, savedConflict(o, err)
		}
	}
	a.Tree.Seal()
	return a, nil
}

// populate builds the synthetic machine, or loads the host's mirror or
// the archive.
func (a *Assembled) populate(o Options) error {
	if o.Archive != "" {
		return a.loadArchive(o)
	}
	if o.HostDir == "" {
		return BuildSynthetic(a.Tree, o.Synth)
	}
	rep, err := MirrorHost(a.Tree, o.HostDir, o.Mirror)
	if err != nil {
		return err
	}
	a.Mirror = &rep
	return nil
}

// hostConflict is err, an ABI that could not be added, as an
// *OptionError for HostDir if the mirror of dir holds what it conflicts
// with, saying what to do.
func hostConflict(dir string, err error) error {
	var ce *ABIConflictError
	if dir == "" || !errors.As(err, &ce) {
		return err
	}
	return &OptionError{Option: "HostDir", Err: fmt.Errorf("%s: %w: remove or rename %s, or mirror a directory without it",
		dir, ce, filepath.Join(dir, ce.Path))}
}

// loadArchive loads o.Archive; an archive refused is an *OptionError.
func (a *Assembled) loadArchive(o Options) error {
	rep, err := LoadArchive(a.Tree, o.Archive, o.ArchiveOpts)
	var ae *ArchiveError
	if errors.As(err, &ae) {
		return &OptionError{Option: "Archive", Err: err}
	}
	if err != nil {
		return err
	}
	a.Archive = &rep
	return nil
}

// savedConflict is hostConflict for a mirror or an archive.
func savedConflict(o Options, err error) error {
	var ce *ABIConflictError
	if o.Archive == "" || !errors.As(err, &ce) {
		return hostConflict(o.HostDir, err)
	}
	return &OptionError{Option: "Archive", Err: fmt.Errorf("%s: %w: delete %s from the archive, or serve an archive without it", o.Archive, ce, ce.Path)}
}
