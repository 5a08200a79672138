package locking

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

func TestLockCountsContention(t *testing.T) {
	testkit.ForEachLock(t, NamesWhere(func(t Traits) bool { return t.AcceptsWriters }), func(t *testing.T, name string) {
		s, err := New(name, Options{})
		require.NoError(t, err)
		require.NoError(t, s.Lock())
		acquired := make(chan struct{})
		go func() {
			s.Lock() // contended: the test holds the write side
			close(acquired)
			s.Unlock()
		}()
		waitFor(t, func() bool { return s.Stats().WriteContended == 1 }) // the writer found it held
		s.Unlock()
		<-acquired
		st := s.Stats()
		if st.WriteAcquisitions != 2 || st.WriteContended != 1 || st.WriteWait <= 0 {
			t.Fatalf("got %d acquisitions, %d contended, wait %v; want 2, 1, > 0", st.WriteAcquisitions, st.WriteContended, st.WriteWait)
		}
		r := s.RLock()
		s.RUnlock(r)
		if got := s.Stats().ReadAcquisitions; got != 1 {
			t.Fatalf("read acquisitions: got %d, want 1", got)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 1e8 {
			t.Fatal("condition never became true")
		}
		runtime.Gosched()
	}
}

func TestNoStats(t *testing.T) {
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s, _ := New(name, Options{NoStats: true, HoldSampleEvery: 1})
		r := s.RLock()
		if r.timed() {
			t.Error("a read side was timed with counters off")
		}
		s.RUnlock(r)
		if s.Lock() == nil {
			s.Unlock()
		}
		if st := s.Stats(); st.CountersSwitchedOn || st.ReadSideCounted || st.ReadAcquisitions != 0 ||
			st.WriteAcquisitions != 0 || st.HoldSampleEvery != 0 {
			t.Fatalf("got %+v, want zero stats with counters off", st)
		}
	})
}

func TestSealRefusesWritersUnlessAccepted(t *testing.T) {
	testkit.ForEachLock(t, Names, func(t *testing.T, name string) {
		s := MustNew(name)
		if err := s.Lock(); err != nil {
			t.Fatalf("before seal: got %v, want nil", err)
		}
		s.Unlock()
		s.Seal()
		err := s.Lock()
		if err == nil {
			s.Unlock()
		}
		if accepts := s.Traits().AcceptsWriters; (err == nil) != accepts || (err != nil && err != ErrReadOnly) {
			t.Fatalf("after seal: got %v; AcceptsWriters is %v", err, accepts)
		}
	})
}

// TestSealWaitsForWriters: a writer inside the write side when Seal is
// called finishes before Seal returns; only the next one is refused.
func TestSealWaitsForWriters(t *testing.T) {
	testkit.ForEachLock(t, NamesWhere(func(t Traits) bool { return !t.AcceptsWriters }), func(t *testing.T, name string) {
		for range 50 {
			s := MustNew(name)
			var inside atomic.Bool
			entered, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; s.Lock() == nil; i++ {
					inside.Store(true)
					if i == 0 {
						close(entered)
					}
					runtime.Gosched()
					inside.Store(false)
					s.Unlock()
				}
			}()
			<-entered
			s.Seal()
			if inside.Load() {
				t.Fatal("Seal returned while a writer was inside the write side")
			}
			<-done
		}
	})
}

// An rwsem reader that finds a writer waiting is counted as contended and
// waits; readers with no writer about are counted on their P's shard, and
// every read is in ReadAcquisitions once.
func TestRWSemCountsReadersBehindAWriter(t *testing.T) {
	s, _ := New("rwsem", Options{})
	r := s.(*RWSem)
	s.RUnlock(s.RLock()) // no writer about
	held := s.RLock()
	wrote := make(chan struct{})
	go func() {
		s.Lock() // waits for the held reader; new readers queue behind it
		s.Unlock()
		close(wrote)
	}()
	waitFor(t, func() bool { // the writer is pending once a reader cannot get in
		if r.mu.TryRLock() {
			r.mu.RUnlock()
			return false
		}
		return true
	})
	read := make(chan struct{})
	go func() {
		s.RUnlock(s.RLock()) // behind the writer
		close(read)
	}()
	waitFor(t, func() bool { return s.Stats().ReadContended == 1 })
	s.RUnlock(held)
	<-wrote
	<-read
	if st := s.Stats(); st.ReadAcquisitions != 3 || st.ReadContended != 1 || st.ReadWait <= 0 || st.WriteAcquisitions != 1 {
		t.Fatalf("got %d read acquisitions (%d contended, wait %v), %d writes; want 3 (1, > 0), 1",
			st.ReadAcquisitions, st.ReadContended, st.ReadWait, st.WriteAcquisitions)
	}
}
