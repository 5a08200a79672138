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
