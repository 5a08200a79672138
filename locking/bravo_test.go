package locking

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bravoClock is a clock a test moves by hand, counting its readings.
type bravoClock struct {
	now, reads atomic.Int64
}

func (c *bravoClock) read() int64 {
	c.reads.Add(1)
	return c.now.Load()
}

// newBRAVOForTest is a bravo lock on a hand-moved clock set to start.
func newBRAVOForTest(t *testing.T, start int64) (*BRAVO, *bravoClock) {
	t.Helper()
	s, err := New("bravo", Options{})
	require.NoError(t, err)
	b := s.(*BRAVO)
	c := &bravoClock{}
	c.now.Store(start)
	b.now = c.read
	return b, c
}

// TestBRAVORevokesAndInhibits: a slow reader sets the bias; a reader then
// takes the fast path; a writer revokes the bias, waiting for that reader
// to leave, and inhibits the bias for 9 times the revocation; readers
// stay on the slow path, and do not set the bias, until the window has
// passed; a writer while unbiased revokes nothing.
func TestBRAVORevokesAndInhibits(t *testing.T) {
	b, clk := newBRAVOForTest(t, 1000)
	b.RUnlock(b.RLock()) // slow: sets the bias (inhibitUntil is 0)
	if !b.rbias.Load() {
		t.Fatal("a slow reader past the inhibit window did not set the bias")
	}
	r := b.RLock()
	if r.inner() == 0 || b.Stats().ReadFast != 1 {
		t.Fatalf("biased reader: token %#x, %d fast; want a table slot, 1 fast", r, b.Stats().ReadFast)
	}

	reads := clk.reads.Load()
	locked := graceGo(func() {
		assert.NoError(t, b.Lock())
	})
	graceWaitUntil(t, "the writer starts revoking", func() bool { return clk.reads.Load() == reads+1 })
	if b.rbias.Load() || graceIsClosed(locked) {
		t.Fatalf("revoking: bias %v, writer in %v; want false, false (the fast reader is still in)", b.rbias.Load(), graceIsClosed(locked))
	}
	clk.now.Store(1100) // the revocation takes 100
	b.RUnlock(r)
	graceWaitClosed(t, "the writer after the fast reader left", locked)
	if want := int64(1100 + 9*100); b.inhibitUntil != want {
		t.Fatalf("inhibit until %d, want %d", b.inhibitUntil, want)
	}
	b.Unlock()

	clk.now.Store(1999)
	b.RUnlock(b.RLock())
	if err := b.Lock(); err != nil { // unbiased: no revocation, the window stays
		t.Fatal(err)
	}
	b.Unlock()
	if st := b.Stats(); b.rbias.Load() || st.ReadFast != 1 || b.inhibitUntil != 2000 {
		t.Fatalf("inside the window: bias %v, %d fast, inhibit until %d; want false, 1, 2000", b.rbias.Load(), st.ReadFast, b.inhibitUntil)
	}
	clk.now.Store(2000)
	b.RUnlock(b.RLock()) // slow: the window has passed, sets the bias
	b.RUnlock(b.RLock()) // fast
	if st := b.Stats(); !b.rbias.Load() || st.ReadFast != 2 || st.ReadAcquisitions != 5 {
		t.Fatalf("after the window: bias %v, %d fast of %d; want true, 2 of 5", b.rbias.Load(), st.ReadFast, st.ReadAcquisitions)
	}
}

// TestBRAVOCollisionTakesSlowPath: a reader whose slot another holds
// (a second reader of the lock on the same P, or another lock's reader)
// takes the rwsem's read side, and each leaves by the way it came.
func TestBRAVOCollisionTakesSlowPath(t *testing.T) {
	b, _ := newBRAVOForTest(t, 1)
	b.RUnlock(b.RLock()) // sets the bias
	var outer, inner ReadToken
	for range 100 { // the two RLocks may run on different Ps; retry until they collide
		outer = b.RLock()
		inner = b.RLock()
		if outer.inner() != 0 && inner.inner() == 0 {
			break
		}
		b.RUnlock(inner)
		b.RUnlock(outer)
		outer = 0
	}
	if outer == 0 {
		t.Skip("the two readers never ran on one P")
	}
	if b.under.mu.TryLock() {
		t.Fatal("the colliding reader does not hold the rwsem's read side")
	}
	b.RUnlock(inner)
	b.RUnlock(outer)
	if !b.under.mu.TryLock() {
		t.Fatal("the rwsem is still held after both readers left")
	}
	b.under.mu.Unlock()
	for i := range bravoTable {
		if bravoTable[i].Load() == b {
			t.Fatalf("slot %d still names the lock after its readers left", i)
		}
	}
}
