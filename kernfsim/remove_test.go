package kernfsim

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// newGPTree is an rcu tree with the given teardown policy and a 100 us
// grace-period tick.
func newGPTree(t testing.TB, gp GPPolicy) *Tree {
	s, err := locking.New("rcu", locking.Options{Grace: fastGrace})
	require.NoError(t, err)
	return New(s, Options{GP: gp})
}

func TestTeardownWaitsForReaders(t *testing.T) {
	for _, gp := range GPPolicies {
		t.Run("gp="+string(gp), func(t *testing.T) {
			tr := newGPTree(t, gp)
			var told []string
			defer tr.Subscribe(func(ev Event) { told = append(told, ev.Op.String()+" "+ev.Name) })()
			b := startBlockedRemoval(t, tr)
			if gp == GPDeferred {
				require.NoError(t, <-b.removed) // returns at once: the teardown is queued
				if _, err := tr.Lookup(tr.Root(), "slow"); err == nil {
					t.Fatal("a removed node is still found after deferred Remove returned")
				}
			}
			waitDraining(t, tr, 1) // the teardown has passed its grace period and waits for the reader
			if got := tr.Teardowns().Completed; got != 0 {
				t.Fatalf("teardown completed while a reader was inside Show (completed %d)", got)
			}
			b.release(t)
			if gp != GPDeferred {
				require.NoError(t, <-b.removed)
			}
			tr.Barrier()
			if st := tr.Teardowns(); st.Completed != 1 || len(told) != 2 || told[1] != "remove slow" {
				t.Fatalf("after the reader left and a barrier: %+v, subscribers told %q; want 1 completed and a remove event", st, told)
			}
		})
	}
}

func TestRemoveAllSharesOneGracePeriod(t *testing.T) {
	tr := newGPTree(t, GPNormal)
	var nodes []*Node
	for i := range 100 {
		nodes = append(nodes, testkit.Must(tr.Mkdir(tr.Root(), fmt.Sprintf("dev%d", i), 0o755))(t))
	}
	sub := testkit.Must(tr.Mkdir(nodes[0], "sub", 0o755))(t)
	before := tr.Strategy().Stats().Grace.GracePeriods
	require.NoError(t, tr.RemoveAll(context.Background(), append(nodes, sub)...))
	if gps := tr.Strategy().Stats().Grace.GracePeriods - before; gps > 2 {
		t.Fatalf("removing 101 nodes in one call took %d grace periods, want 1 (2 if a tick raced)", gps)
	}
	if tr.Nodes() != 1 || tr.Teardowns().Completed != 101 {
		t.Fatalf("after RemoveAll: %d nodes, %+v; want 1 node and 101 teardowns", tr.Nodes(), tr.Teardowns())
	}
	testkit.WantErrno(t, tr.RemoveAll(context.Background(), nodes[1]), syscall.ENOENT)
}

func TestRemoveAllIsAllOrNothing(t *testing.T) {
	testkit.ForEachLock(t, writers, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		a := testkit.Must(tr.Mkdir(tr.Root(), "a", 0o755))(t)
		gone := testkit.Must(tr.Mkdir(tr.Root(), "gone", 0o755))(t)
		require.NoError(t, tr.Remove(context.Background(), gone))
		testkit.WantErrno(t, tr.RemoveAll(context.Background(), a, gone), syscall.ENOENT)
		testkit.WantErrno(t, tr.RemoveAll(context.Background(), a, tr.Root()), syscall.EBUSY)
		if !a.IsActive() || tr.Nodes() != 2 {
			t.Fatalf("a failed RemoveAll changed the tree: a active %v, %d nodes", a.IsActive(), tr.Nodes())
		}
	})
}

// TestRemoveDrainsInFlightUsers: under every strategy a removal waits for
// a reader inside Show, and under a strategy that refuses writers once
// sealed, sealing the tree while the removal drains neither blocks nor
// breaks the removal (it holds no write side while draining).
func TestRemoveDrainsInFlightUsers(t *testing.T) {
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr := newTestTree(t, lock)
		b := startBlockedRemoval(t, tr)
		waitDraining(t, tr, 1)
		if !tr.Strategy().Traits().AcceptsWriters {
			tr.Seal()
		}
		if got := tr.Teardowns().Completed; got != 0 {
			t.Fatalf("teardown completed while a reader was inside Show (completed %d)", got)
		}
		b.release(t)
		require.NoError(t, <-b.removed)
		tr.Barrier()
		if _, err := tr.Lookup(tr.Root(), "slow"); err == nil || tr.Nodes() != 1 || tr.Teardowns().Completed != 1 {
			t.Fatalf("after the removal: lookup %v, %d nodes, %+v; want ENOENT, 1 node, 1 teardown", err, tr.Nodes(), tr.Teardowns())
		}
	})
}

// blockedRemoval is a removal of attribute "slow" started while a read of
// it is inside Show.
type blockedRemoval struct {
	src               *blockingSource
	readDone, removed chan error
}

// startBlockedRemoval adds "slow" to tr, starts a read that blocks in its
// Show, then starts removing it. release lets the read finish; the file
// is released when the test ends.
func startBlockedRemoval(t *testing.T, tr *Tree) *blockedRemoval {
	t.Helper()
	b := &blockedRemoval{src: &blockingSource{entered: make(chan struct{}), release: make(chan struct{})},
		readDone: make(chan error, 1), removed: make(chan error, 1)}
	n := testkit.Must(tr.AddAttr(tr.Root(), "slow", 0o444, b.src))(t)
	f := testkit.Must(tr.Open(n, os.O_RDONLY, RootCred))(t)
	t.Cleanup(f.Release)
	go func() { _, err := f.Read(make([]byte, 64), 0); b.readDone <- err }()
	<-b.src.entered
	go func() { b.removed <- tr.Remove(context.Background(), n) }()
	return b
}

// release lets the read finish and checks it.
func (b *blockedRemoval) release(t *testing.T) {
	t.Helper()
	close(b.src.release)
	require.NoError(t, <-b.readDone)
}

// waitDraining polls, with a deadline, until want removed nodes wait for
// their users.
func waitDraining(t *testing.T, tr *Tree, want int64) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		if got := tr.Teardowns().Draining; got != want {
			c.Errorf("teardowns draining: got %d, want %d", got, want)
		}
	}, 10*time.Second, 100*time.Microsecond)
}

// BenchmarkRemove measures the caller's cost of one removal under each
// strategy that accepts writers, and under each teardown policy where the
// strategy has grace periods:
//
//	go test -run x -bench Remove -benchtime 200x ./kernfsim/
func BenchmarkRemove(b *testing.B) {
	for _, lock := range writers {
		gps := []GPPolicy{""}
		if testkit.Must(locking.TraitsOf(lock))(b).GracePeriods {
			gps = GPPolicies
		}
		for _, gp := range gps {
			name := "lock=" + lock
			if gp != "" {
				name += "/gp=" + string(gp)
			}
			b.Run(name, func(b *testing.B) { benchRemove(b, lock, gp) })
		}
	}
}

func benchRemove(b *testing.B, lock string, gp GPPolicy) {
	tr := New(locking.MustNew(lock), Options{GP: gp})
	nodes := make([]*Node, b.N)
	for i := range nodes {
		nodes[i] = testkit.Must(tr.Mkdir(tr.Root(), fmt.Sprintf("dev%d", i), 0o755))(b)
	}
	b.ResetTimer()
	for _, n := range nodes {
		if err := tr.Remove(context.Background(), n); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	tr.Barrier()
	if tr.Teardowns().Completed != uint64(b.N) {
		b.Fatalf("%d teardowns completed, want %d", tr.Teardowns().Completed, b.N)
	}
}
