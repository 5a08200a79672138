package fusefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
)

// lookups is how many LOOKUPs have reached m's server.
func lookups(m *Mount) uint64 { return m.Server.stats.Requests()[opLookup] }

// missingCost is how many LOOKUPs one stat of dir/name costs beyond one
// stat of dir, after a first stat of the missing name: 0 where the kernel
// keeps the negative entry, 1 where every lookup of it reaches the server.
func missingCost(t *testing.T, m *Mount, dir, name string) uint64 {
	t.Helper()
	missing := filepath.Join(m.Mountpoint, dir, name)
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s: got %v, want ENOENT", missing, err)
	}
	n0 := lookups(m)
	testkit.Must(os.Stat(filepath.Join(m.Mountpoint, dir)))(t)
	n1 := lookups(m)
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s again: got %v, want ENOENT", missing, err)
	}
	n2 := lookups(m)
	return (n2 - n1) - (n1 - n0)
}

// TestNegativesFollowTheLock: by default a missing name is cached by the
// kernel exactly when the strategy CachesNegatives (kernfs from 5.15),
// and a cached one never survives the name's creation.
func TestNegativesFollowTheLock(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		testkit.ForEachLock(t, testtree.Writers, func(t *testing.T, lock string) {
			tr, _ := newServedTree(t, lock)
			m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
			caches := tr.Strategy().Traits().CachesNegatives
			rule := m.Server.Negatives()
			want := NegativeRule{FromLock: true}
			if caches {
				want.Timeout = NegativeUntilChanged
			}
			if rule != want {
				t.Fatalf("Negatives() = %+v, want %+v", rule, want)
			}
			cost := missingCost(t, m, "devices/kernfsim", "d0")
			if wantCost := map[bool]uint64{true: 0, false: 1}[caches]; cost != wantCost {
				t.Errorf("a repeated lookup of a missing name cost %d LOOKUPs, want %d (%s caches negatives: %v)", cost, wantCost, lock, caches)
			}
			ctl(t, m.Mountpoint, "new_device", "d0")
			if _, err := os.Stat(filepath.Join(m.Mountpoint, "devices/kernfsim/d0/value")); err != nil {
				t.Fatalf("created device after a lookup of its missing name: %v", err)
			}
			ctl(t, m.Mountpoint, "delete_device", "d0")
			if _, err := os.Stat(filepath.Join(m.Mountpoint, "devices/kernfsim/d0")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("after delete_device: got %v, want ENOENT", err)
			}
		})
	})
}

// TestNegativeTimeoutOverridesTheLock: an explicit negative timeout wins
// over the strategy, both ways, and the rule says so.
func TestNegativeTimeoutOverridesTheLock(t *testing.T) {
	for _, c := range []struct {
		lock    string
		timeout time.Duration
		cost    uint64
	}{
		{"mutex", time.Hour, 0},
		{"rwsem", 0, 1},
	} {
		t.Run(c.lock, func(t *testing.T) {
			tr, _ := newServedTree(t, c.lock)
			m := mountTest(t, tr, MountOptions{Options: Options{NegativeTimeout: new(c.timeout)}})
			if got, want := m.Server.Negatives(), (NegativeRule{Timeout: c.timeout}); got != want {
				t.Fatalf("Negatives() = %+v, want %+v", got, want)
			}
			if got := m.Server.Negatives().String(); got != "override" {
				t.Errorf("rule %q, want override", got)
			}
			if cost := missingCost(t, m, "devices/kernfsim", "d0"); cost != c.cost {
				t.Errorf("a repeated lookup of a missing name cost %d LOOKUPs, want %d", cost, c.cost)
			}
		})
	}
}

func TestNegativeRuleString(t *testing.T) {
	for rule, want := range map[NegativeRule]string{
		{FromLock: true, Timeout: NegativeUntilChanged}: "lock:cached",
		{FromLock: true}:       "lock:uncached",
		{Timeout: time.Second}: "override",
		{}:                     "override",
	} {
		if got := rule.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", rule, got, want)
		}
	}
}
