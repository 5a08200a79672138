package sysfs

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// raceTally counts the replies of racing new_device and delete_device
// writes of one name.
type raceTally struct {
	created, deleted atomic.Int64
	bad              atomic.Value // first reply outside the ABI's list
}

// run issues rounds writes of data to file, counting successes in ok and
// recording any error other than allowed.
func (r *raceTally) run(w *kernfsim.Walker, file, data string, rounds int, ok *atomic.Int64, allowed syscall.Errno) {
	for range rounds {
		err := rootWrite(w, "bus/kernfsim/"+file, data)
		switch {
		case err == nil:
			ok.Add(1)
		case !errors.Is(err, allowed):
			r.bad.CompareAndSwap(nil, fmt.Sprintf("%s %q: %v (only success or %v is true here)", file, data, err, allowed))
		}
	}
}

// raceConfigs are the strategies of locking.Names, rcu once per grace-period
// policy.
func raceConfigs() []struct {
	lock string
	gp   kernfsim.GPPolicy
} {
	var cs []struct {
		lock string
		gp   kernfsim.GPPolicy
	}
	for _, l := range locking.Names {
		gps := []kernfsim.GPPolicy{""}
		if locking.MustNew(l).Grace() != nil {
			gps = kernfsim.GPPolicies
		}
		for _, gp := range gps {
			cs = append(cs, struct {
				lock string
				gp   kernfsim.GPPolicy
			}{l, gp})
		}
	}
	return cs
}

// TestABICreateDeleteRace races creators and deleters of one device name.
// Every reply must be true: creations that succeeded minus deletions that
// succeeded is whether the device exists at the end, the only errors are
// EEXIST and ENODEV, and the device is whole (directory, attributes and
// class link) or absent.
func TestABICreateDeleteRace(t *testing.T) {
	for _, c := range raceConfigs() {
		t.Run(fmt.Sprintf("lock=%s/gp=%s", c.lock, c.gp), func(t *testing.T) {
			s, err := locking.New(c.lock, locking.Options{Grace: testtree.FastGrace})
			require.NoError(t, err)
			tr := kernfsim.New(s, kernfsim.Options{GP: c.gp})
			testkit.Must(AddABI(tr, nil))(t)
			base := tr.Nodes()
			w := kernfsim.NewWalker(tr, kernfsim.WalkerOptions{})
			var r raceTally
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() { r.run(w, "new_device", "racer0 4", 400, &r.created, syscall.EEXIST) })
				wg.Go(func() { r.run(w, "delete_device", "racer0", 400, &r.deleted, syscall.ENODEV) })
			}
			wg.Wait()
			tr.Barrier()
			if msg := r.bad.Load(); msg != nil {
				t.Error(msg)
			}
			checkRaceEnd(t, tr, w, base, r.created.Load()-r.deleted.Load())
		})
	}
}

// checkRaceEnd checks the tree after a race that should leave exists
// (0 or 1) devices called racer0 with 4 extra attributes.
func checkRaceEnd(t *testing.T, tr *kernfsim.Tree, w *kernfsim.Walker, base, exists int64) {
	t.Helper()
	_, dirErr := w.Lresolve(kernfsim.RootCred, "devices/kernfsim/racer0")
	_, linkErr := w.Lresolve(kernfsim.RootCred, "class/kernfsim/racer0")
	if exists != 0 && exists != 1 {
		t.Fatalf("successful creates minus successful deletes: got %d, want 0 or 1", exists)
	}
	if (dirErr == nil) != (linkErr == nil) {
		t.Fatalf("device directory: %v; class link: %v; want both or neither", dirErr, linkErr)
	}
	if got := dirErr == nil; got != (exists == 1) {
		t.Fatalf("device exists: got %v, want %v (from the successful replies)", got, exists == 1)
	}
	if want := base + exists*(1+3+4+1); tr.Nodes() != want {
		t.Fatalf("nodes: got %d, want %d (a whole device or none)", tr.Nodes(), want)
	}
	if exists == 1 {
		if _, err := w.Resolve(kernfsim.RootCred, "class/kernfsim/racer0/attr3"); err != nil {
			t.Fatalf("the class link does not lead to a whole device: %v", err)
		}
	}
}
