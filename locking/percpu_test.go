package locking

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

func newPercpuForTest(t *testing.T, name string, o Options) *PercpuRWSem {
	t.Helper()
	s, err := New(name, o)
	require.NoError(t, err)
	return s.(*PercpuRWSem)
}

// TestPercpuWriterWaitsAGracePeriod: readers are fast while no writer is
// about; the first writer waits a normal grace period (rcu_sync_enter),
// which the Grace stats count; under percpu-dyn readers are never fast,
// and writers wait for none.
func TestPercpuWriterWaitsAGracePeriod(t *testing.T) {
	for _, c := range []struct {
		name     string
		fast     int64
		waits    uint64
		hasGrace bool
	}{
		{"percpu", 1, 1, true},
		{"percpu-dyn", 0, 0, false},
	} {
		t.Run("lock="+c.name, func(t *testing.T) {
			p := newPercpuForTest(t, c.name, Options{Grace: testGrace})
			if got := p.Grace() != nil; got != c.hasGrace {
				t.Fatalf("has a Grace: got %v, want %v", got, c.hasGrace)
			}
			p.RUnlock(p.RLock())
			require.NoError(t, p.Lock())
			p.Unlock()
			st := p.Stats()
			if st.ReadFast != c.fast || st.ReadAcquisitions != 1 {
				t.Errorf("one reader before any writer: %d fast of %d, want %d of 1", st.ReadFast, st.ReadAcquisitions, c.fast)
			}
			if g := st.Grace; g.Waits != c.waits || (c.waits > 0 && g.GracePeriods == 0) || g.Expedited != 0 {
				t.Errorf("one writer: %d grace-period waits, %d grace periods (%d expedited); want %d waits, a normal grace period each",
					g.Waits, g.GracePeriods, g.Expedited, c.waits)
			}
		})
	}
}

// TestPercpuExitWaitsAGracePeriod: after a writer leaves, readers stay on
// the slow path until a grace period has passed (rcu_sync_exit queues
// it); a writer that comes meanwhile waits for no grace period and asks
// for one more (GP_REPLAY). The tick is an hour, so the exit's normal
// grace period comes only when the test drives expedited ones.
func TestPercpuExitWaitsAGracePeriod(t *testing.T) {
	p := newPercpuForTest(t, "percpu", Options{Grace: GraceConfig{Tick: time.Hour}, ExpediteSync: true})
	writeOnce := func() {
		require.NoError(t, p.Lock())
		p.Unlock()
	}
	writeOnce()
	if g := p.Stats().Grace; g.Waits != 1 || g.Expedited != 1 || g.CallbacksQueued != 1 {
		t.Fatalf("first writer: %+v; want 1 wait for an expedited grace period, the exit queued", g)
	}
	if st := p.state.Load(); st != rssExit {
		t.Fatalf("after the writer: rcu_sync state %d, want %d (exit queued)", st, rssExit)
	}
	p.RUnlock(p.RLock())
	writeOnce()
	if st := p.Stats(); st.ReadFast != 0 || st.Grace.Waits != 1 || st.Grace.CallbacksQueued != 1 || p.state.Load() != rssReplay {
		t.Fatalf("a reader and a writer within the exit's grace period: %d fast readers, %+v, state %d; want 0, 1 wait, 1 queued, state %d",
			st.ReadFast, st.Grace, p.state.Load(), rssReplay)
	}
	g := p.Grace()
	graceWaitUntil(t, "readers may be fast again", func() bool {
		g.SynchronizeExpedited() // lets the queued callback run, twice (replay)
		return p.state.Load() == rssIdle
	})
	p.RUnlock(p.RLock())
	if st := p.Stats(); st.ReadFast != 1 || st.Grace.CallbacksRun != 2 {
		t.Fatalf("after the exit: %d fast readers, %d callbacks run; want 1, 2", st.ReadFast, st.Grace.CallbacksRun)
	}
}

// TestPercpuWriterWaitsForFastReader: a reader in by the fast path keeps
// a writer out (counted contended) until it leaves, and a reader that
// comes while the writer holds the lock waits for it.
func TestPercpuWriterWaitsForFastReader(t *testing.T) {
	testkit.ForEachLock(t, []string{"percpu", "percpu-dyn"}, func(t *testing.T, name string) {
		p := newPercpuForTest(t, name, Options{Grace: testGrace})
		r := p.RLock()
		locked := graceGo(func() {
			assert.NoError(t, p.Lock())
		})
		graceWaitUntil(t, "the writer waits for the reader", func() bool { return p.Stats().WriteContended == 1 })
		if graceIsClosed(locked) {
			t.Fatal("the writer got in past a reader")
		}
		p.RUnlock(r)
		graceWaitClosed(t, "the writer after the reader left", locked)
		read := graceGo(func() { p.RUnlock(p.RLock()) })
		graceWaitUntil(t, "a reader waits for the writer", func() bool { return p.Stats().ReadContended == 1 })
		if graceIsClosed(read) {
			t.Fatal("a reader got in past the writer")
		}
		p.Unlock()
		graceWaitClosed(t, "the reader after the writer left", read)
	})
}
