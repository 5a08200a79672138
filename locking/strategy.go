// Package locking provides the lock strategies of kernfsim's tree, and a grace-period engine.
//
// The rcu and percpu strategies use the engine.
//
// A Strategy has a read side (lookup, revalidate, permission, getattr,
// readdir) and a write side (add, remove, rename, setattr). The first
// four strategies model four eras of Linux kernfs; the others model
// kernfs as mainline has it now and read-mostly locks Linux uses
// elsewhere but never put in front of kernfs:
//
//	mutex       one global mutex for readers and writers (kernfs <= 5.14)
//	rwsem       readers share, writers exclude, writer preference (kernfs 5.15+)
//	rcu         readers take no lock; writers serialise on one writer mutex and
//	            publish copy-on-write; teardown waits for a grace period
//	none        no synchronisation; writers are refused once the tree is sealed
//	kernfs64    kernfs from 6.4: a tree rwsem, a separate attribute rwsem for
//	            permission, getattr and setattr (Traits.SeparateAttrLock), and
//	            1024 hashed open-file mutexes (Traits.OpenFileLocks)
//	kernfs74    kernfs as queued for 7.4: kernfs64's locks, revalidation without
//	            any (Traits.LocklessRevalidate), readdir taking the read side
//	            per entry (Traits.ReaddirPerEntry)
//	percpu      percpu_rw_semaphore: readers count on their own CPU's counter
//	            while no writer is about; a writer first waits a grace period
//	            to switch them to the slow path, then for them to drain
//	percpu-dyn  percpu with readers always on the slow path, as cgroup's
//	            favordynmods: writers wait for no grace period
//	bravo       BRAVO's reader bias over an rwsem: readers publish themselves
//	            in a visible-readers table; a writer revokes the bias
//
// Each strategy counts its lock as Linux's /proc/lock_stat does (Stats):
// acquisitions, contentions and wait time exactly, hold time on a sample
// (Options.HoldSampleEvery, holdtime.go). They count on the lock's own
// line, which the acquirer has just written, or on the P's own line
// (the readers of rwsem, rcu and the later strategies), so counting
// shares no line that the lock does not already share.
//
// Lock ordering (outer to inner):
//
//	percpu's rcu_sync wait (rcu_sync_enter: PercpuRWSem.rssMu, released
//	while it waits in Grace.Synchronize; nothing else held)
//	Strategy write side (mutex.mu / rwsem.mu / rcu.writer / none.build /
//	kernfs64's and kernfs74's tree rwsem / percpu's gate / bravo's rwsem, then its
//	revocation wait)
//	  Grace.gpMu (only through Grace methods, never while a read side is held)
//	    Grace.mu
//	kernfs64's and kernfs74's tree rwsem, either side
//	  their attribute rwsem (AttrLocker), either side; also taken alone
//	their open-file mutexes (OpenFileLocker): taken alone, one at a time
//	PercpuRWSem.rssMu (rcu_sync_exit and its callback)
//	  Grace.mu (Grace.Call)
//
// A read side is never held while taking the write side, and nothing is
// taken inside an attribute or open-file lock.
package locking

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Strategy is the synchronisation a tree runs under.
type Strategy interface {
	// Name is the strategy's name as accepted by New.
	Name() string
	// RLock enters the read side; pass the token to RUnlock.
	RLock() ReadToken
	// RUnlock leaves the read side entered with t.
	RUnlock(t ReadToken)
	// Lock enters the write side. It fails only for strategies that refuse
	// writers (none, once sealed).
	Lock() error
	// Unlock leaves the write side.
	Unlock()
	// Seal marks the end of construction: none refuses writers from now on.
	Seal()
	// Grace returns the grace-period engine, or nil if the strategy has none.
	Grace() *Grace
	// Traits says what users of the strategy must do differently under it.
	Traits() Traits
	// Stats returns the lock counters so far.
	Stats() Stats
}

// ErrReadOnly is returned by Lock under none once the tree is sealed.
var ErrReadOnly = errors.New("lock strategy none is read-only: writers need another strategy (mutex, rwsem, rcu, ...)")

// Options tune a strategy.
type Options struct {
	// NoStats turns the lock counters off (they are on by default).
	NoStats bool
	// HoldSampleEvery is how many acquisitions of a side (per P for
	// rwsem's and rcu's readers) share one timed hold (Stats.ReadHeld,
	// WriteHeld): 1 times every one, 0 means DefaultHoldSampleEvery,
	// others round up to a power of two, at most MaxHoldSampleEvery; New
	// rejects the rest. Counts are exact whatever it is.
	HoldSampleEvery int
	// Grace configures the grace-period engine of the strategies that
	// have one (rcu, percpu).
	Grace GraceConfig
	// ExpediteSync makes percpu's writers switch readers to the slow path
	// with an expedited grace period (SynchronizeExpedited, as
	// rcu_sync_enter's synchronize_rcu under rcu_expedited=1) instead of
	// a normal one. sysfs.Assemble sets it for --gp=expedited; the other
	// strategies ignore it.
	ExpediteSync bool
	// HoldDelay lengthens every critical section of the tree lock, both
	// sides, by a spin of this long inside it (delay.go): an artificial
	// hold that raises the lock's serial time per operation, to check
	// where the binding model says it stops scaling. 0 means none; New
	// rejects a negative one or one above MaxHoldDelay.
	HoldDelay time.Duration
}

// New returns the strategy called name.
func New(name string, opts Options) (Strategy, error) {
	d, err := lookupDef(name)
	if err != nil {
		return nil, err
	}
	if err := checkHoldSampleEvery(opts.HoldSampleEvery); err != nil {
		return nil, err
	}
	if opts.HoldDelay < 0 || opts.HoldDelay > MaxHoldDelay {
		return nil, fmt.Errorf("hold delay %v: give 0 (none) to %v", opts.HoldDelay, MaxHoldDelay)
	}
	return withHoldDelay(d.make(opts), opts.HoldDelay), nil
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

// MustNew is New for names known to be valid, such as those in Names.
func MustNew(name string) Strategy {
	s, err := New(name, Options{})
	if err != nil {
		panic(err)
	}
	return s
}
