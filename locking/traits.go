package locking

import "fmt"

// Traits are what a strategy's users must do differently under it. Code
// that depends on the strategy asks for a trait; it never compares names,
// so a new strategy is routed by what it declares.
type Traits struct {
	// ScopedReads: the read side is a scope, not a lock. Entering it
	// excludes no writer and writes no shared cache line, so one read
	// section may cover a whole path walk (rcu-walk), and structures
	// published for lock-free readers (a nodeid table) are read without
	// it. Otherwise every lookup, revalidate or permission call takes the
	// read side on its own, and shared tables are read under it (ref-walk,
	// as kernfs took its lock per call).
	ScopedReads bool
	// CachesNegatives: a lookup of a missing name may be cached, and is
	// revalidated by its directory's revision (kernfs from Linux 5.15).
	CachesNegatives bool
	// DrainBeforeUnlink: a removal deactivates, drains in-flight users
	// without the write side, then takes the write side again to unlink
	// (kernfs). Otherwise it unlinks with the deactivation, under one
	// acquisition of the write side, and tears down after a grace period
	// if the strategy has one. A strategy that refuses writers must not
	// drain before unlink: Seal could refuse the second acquisition.
	DrainBeforeUnlink bool
	// AcceptsWriters: Lock keeps succeeding after Seal, so the tree can
	// change while it is served (new_device, churn, coldplug).
	AcceptsWriters bool
	// GracePeriods: Grace returns an engine, and removals order their
	// teardown after a grace period (the --gp policies apply).
	GracePeriods bool
	// SeparateAttrLock: node attributes are read (permission, getattr)
	// and written (setattr) under a lock of their own instead of the
	// tree's read and write sides, and the strategy is an AttrLocker
	// (kernfs from Linux 6.4: kernfs_iattr_rwsem). Lookup, revalidate and
	// readdir keep the tree's read side.
	SeparateAttrLock bool
	// OpenFileLocks: opening and releasing a file takes a mutex that the
	// strategy picks by the node, and the strategy is an OpenFileLocker
	// (kernfs from Linux 6.0: hashed kernfs_open_file_mutex).
	OpenFileLocks bool
	// LocklessRevalidate: revalidating a cached lookup (d_revalidate)
	// takes no lock: the directory's revision and the node's liveness,
	// parent and name are read with atomic loads, each a value its
	// writer publishes whole (kernfs as queued for Linux 7.4:
	// kernfs_dop_revalidate without kernfs_rwsem). Lookup keeps the read
	// side.
	LocklessRevalidate bool
	// ReaddirPerEntry: readdir takes the read side once per entry and
	// finds the next entry by its full key (hash, name), instead of once
	// for the listing (kernfs as queued for 7.4: no kernfs_rwsem across
	// dir_emit).
	ReaddirPerEntry bool
	// ExclusiveReads: the read side excludes other readers (one lock for
	// readers and writers, as kernfs's mutex up to 5.14), so its hold
	// time is serial time, as a write side's is.
	ExclusiveReads bool
}

// AttrLocker is the lock of a strategy with Traits.SeparateAttrLock that
// node attributes are read and written under. Its read side may be taken
// inside the tree's read side, never the other way round; nothing is
// taken inside it.
type AttrLocker interface {
	// AttrRLock enters the read side (kernfs_iop_permission's and
	// kernfs_iop_getattr's down_read); pass the token to AttrRUnlock.
	AttrRLock() ReadToken
	// AttrRUnlock leaves the read side entered with t.
	AttrRUnlock(t ReadToken)
	// AttrLock enters the write side (kernfs_iop_setattr's down_write).
	AttrLock()
	// AttrUnlock leaves the write side.
	AttrUnlock()
}

// OpenFileLocker is the per-node lock of a strategy with
// Traits.OpenFileLocks, taken when a file is opened and when it is
// released (kernfs_get_open_node, kernfs_unlink_open_file). Keys are
// hashed onto a fixed set of mutexes, so two nodes may share one. It is
// taken with no other lock of the strategy held, and nothing is taken
// inside it.
type OpenFileLocker interface {
	// OpenFileLock locks the mutex of the node with key (its inode number).
	OpenFileLock(key uint64)
	// OpenFileUnlock unlocks what OpenFileLock(key) locked.
	OpenFileUnlock(key uint64)
}

// strategyDef is one strategy New knows: adding a strategy is adding a type
// and a line here.
type strategyDef struct {
	name   string
	traits Traits
	make   func(Options) Strategy
}

var builtins = []strategyDef{
	{"mutex", Traits{DrainBeforeUnlink: true, AcceptsWriters: true, ExclusiveReads: true}, func(o Options) Strategy {
		m := &Mutex{}
		m.stats.init(o)
		return m
	}},
	{"rwsem", Traits{CachesNegatives: true, DrainBeforeUnlink: true, AcceptsWriters: true}, func(o Options) Strategy {
		return newRWSem(o)
	}},
	{"rcu", Traits{ScopedReads: true, CachesNegatives: true, AcceptsWriters: true, GracePeriods: true}, func(o Options) Strategy {
		r := &RCU{grace: NewGrace(o.Grace), count: !o.NoStats, hold: holdSamplerOf(o.HoldSampleEvery), reads: newReadShards()}
		r.stats.init(o)
		return r
	}},
	{"none", Traits{ScopedReads: true, CachesNegatives: true}, func(o Options) Strategy {
		n := &None{}
		n.stats.init(o)
		return n
	}},
	// The later designs follow the first four, whose order the CLI's
	// messages and their tests keep ("mutex, rwsem, rcu, none").
	{"kernfs64", Traits{CachesNegatives: true, DrainBeforeUnlink: true, AcceptsWriters: true,
		SeparateAttrLock: true, OpenFileLocks: true}, func(o Options) Strategy {
		return newKernfs64(o)
	}},
	{"kernfs74", Traits{CachesNegatives: true, DrainBeforeUnlink: true, AcceptsWriters: true,
		SeparateAttrLock: true, OpenFileLocks: true, LocklessRevalidate: true, ReaddirPerEntry: true}, func(o Options) Strategy {
		return newKernfs74(o)
	}},
	{"percpu", Traits{CachesNegatives: true, DrainBeforeUnlink: true, AcceptsWriters: true, GracePeriods: true}, func(o Options) Strategy {
		return newPercpu(o, false)
	}},
	{"percpu-dyn", Traits{CachesNegatives: true, DrainBeforeUnlink: true, AcceptsWriters: true}, func(o Options) Strategy {
		return newPercpu(o, true)
	}},
	{"bravo", Traits{CachesNegatives: true, DrainBeforeUnlink: true, AcceptsWriters: true}, func(o Options) Strategy {
		return newBRAVO(o)
	}},
}

// Names lists the valid strategy names: the four that began the project
// in the order of their era (mutex, rwsem, rcu, none), then the later
// designs (kernfs64, kernfs74, percpu, percpu-dyn, bravo).
var Names = func() []string {
	var names []string
	for _, d := range builtins {
		names = append(names, d.name)
	}
	return names
}()

// TraitsOf returns the traits of the strategy called name, without making
// one, or an error naming the valid strategies.
func TraitsOf(name string) (Traits, error) {
	d, err := lookupDef(name)
	return d.traits, err
}

// NamesWhere lists, in the order of Names, the strategies whose traits
// satisfy keep: NamesWhere(func(t Traits) bool { return t.AcceptsWriters }).
func NamesWhere(keep func(Traits) bool) []string {
	var names []string
	for _, d := range builtins {
		if keep(d.traits) {
			names = append(names, d.name)
		}
	}
	return names
}

func lookupDef(name string) (strategyDef, error) {
	for _, d := range builtins {
		if d.name == name {
			return d, nil
		}
	}
	return strategyDef{}, fmt.Errorf("unknown lock strategy %q: valid strategies are %s", name, joinNames(Names))
}

// mustTraits is the traits of a built-in strategy.
func mustTraits(name string) Traits {
	t, err := TraitsOf(name)
	if err != nil {
		panic(err) // broken invariant: a built-in missing from builtins
	}
	return t
}
