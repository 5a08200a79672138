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
}

// strategyDef is one strategy New knows: adding a strategy is adding a type
// and a line here.
type strategyDef struct {
	name   string
	traits Traits
	make   func(Options) Strategy
}

var builtins = []strategyDef{
	{"mutex", Traits{DrainBeforeUnlink: true, AcceptsWriters: true}, func(o Options) Strategy {
		m := &Mutex{}
		m.stats.init(o)
		return m
	}},
	{"rwsem", Traits{CachesNegatives: true, DrainBeforeUnlink: true, AcceptsWriters: true}, func(o Options) Strategy {
		r := &RWSem{count: !o.NoStats, hold: holdSamplerOf(o.HoldSampleEvery), reads: newReadShards()}
		r.stats.init(o)
		return r
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
}

// Names lists the valid strategy names in the order of their era.
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
