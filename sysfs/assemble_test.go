package sysfs

import (
	"errors"
	"testing"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

func TestAssemble(t *testing.T) {
	small := SynthConfig{CPUs: 2, Sockets: 1, ThreadsPerCore: 1, MemBlocks: 1}.WithDefaults()
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		stats := kernfsim.Static("k 1\n")
		var statsTree *kernfsim.Tree
		a := testkit.Must(Assemble(Options{Lock: lock, Grace: testtree.FastGrace, Synth: small, ABI: true,
			Stats: func(tr *kernfsim.Tree) kernfsim.Source { statsTree = tr; return stats }}))(t)
		if a.ABI == nil || a.Mirror != nil || statsTree != a.Tree {
			t.Fatalf("got ABI %v, mirror %v, stats made for %p (tree %p)", a.ABI, a.Mirror, statsTree, a.Tree)
		}
		w := kernfsim.NewWalker(a.Tree, kernfsim.WalkerOptions{})
		for _, p := range []string{"devices/system/cpu/cpu1", "bus/kernfsim/new_device", "kernel/kernfsim/stats"} {
			testkit.Must(w.Resolve(kernfsim.RootCred, p))(t)
		}
		// sealed: a strategy that refuses writers refuses new_device now
		err := a.ABI.Create("d0", 0)
		if accepts := a.Tree.Strategy().Traits().AcceptsWriters; (err == nil) != accepts {
			t.Fatalf("new_device after Assemble: %v (writers accepted: %v)", err, accepts)
		}
	})
}

func TestAssembleMirrorAndErrors(t *testing.T) {
	a := testkit.Must(Assemble(Options{Lock: "rwsem", HostDir: makeHost(t, fakeHost)}))(t)
	if a.Mirror == nil || a.ABI != nil || a.Tree.Nodes() < 2 {
		t.Fatalf("mirror: report %v, ABI %v, %d nodes", a.Mirror, a.ABI, a.Tree.Nodes())
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Lock: "spinlock", Synth: SynthConfig{}.WithDefaults()}, "Lock"},
		{Options{Lock: "rcu", Synth: SynthConfig{CPUs: -1}}, "Synth"},
	} {
		_, err := Assemble(c.o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.want {
			t.Errorf("Assemble(%+v): got %v, want an OptionError for %s", c.o, err, c.want)
		}
	}
}
