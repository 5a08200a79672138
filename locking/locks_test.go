package locking

import (
	"runtime"
	"testing"
)

func TestLockCountsContention(t *testing.T) {
	for _, name := range []string{"mutex", "rwsem", "rcu"} {
		t.Run("lock="+name, func(t *testing.T) {
			s, err := New(name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Lock(); err != nil {
				t.Fatal(err)
			}
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
			if want := map[string]int64{"mutex": 1, "rwsem": 1, "rcu": 0}[name]; s.Stats().ReadAcquisitions != want {
				t.Fatalf("read acquisitions: got %d, want %d (rcu readers take no lock)", s.Stats().ReadAcquisitions, want)
			}
		})
	}
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
	s, _ := New("rwsem", Options{NoStats: true})
	s.RLock()
	s.RUnlock(0)
	if st := s.Stats(); st.CountersSwitchedOn || st.ReadAcquisitions != 0 {
		t.Fatalf("got %+v, want zero stats with counters off", st)
	}
}

func TestNoneRefusesWritersOnceSealed(t *testing.T) {
	s, _ := New("none", Options{})
	if err := s.Lock(); err != nil {
		t.Fatalf("before seal: got %v, want nil", err)
	}
	s.Unlock()
	s.Seal()
	if err := s.Lock(); err != ErrReadOnly {
		t.Fatalf("after seal: got %v, want ErrReadOnly", err)
	}
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
