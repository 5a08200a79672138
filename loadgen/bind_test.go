package loadgen

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/locking"
)

// TestBindingOf checks the model's arithmetic per strategy shape: an
// exclusive read side binds on its hold, a shared one on two line
// transfers per acquisition less the fast ones, scoped readers never; a
// write side on its hold; kernfs74's attribute rwsem as a shared read
// side plus its writers; the busiest class is the smallest T/S.
func TestBindingOf(t *testing.T) {
	tr := func(name string) locking.Traits { tr, _ := locking.TraitsOf(name); return tr }
	const ops = 1000
	reads := func(acq int64, held time.Duration) locking.Stats {
		return locking.Stats{ReadSideCounted: true, LockCounts: locking.LockCounts{ReadAcquisitions: acq, ReadHeld: held}}
	}
	inf := math.Inf(1)
	for _, c := range []struct {
		name    string
		stats   locking.Stats
		traits  locking.Traits
		busiest string
		serial  time.Duration // the busiest class's S
		bind    float64
		files   int
	}{
		// mutex: 3 acquisitions of 20 ns per op, T 1 us: S 60 ns, binds at 16.7
		{"mutex", reads(3*ops, 60*ops), tr("mutex"), ClassTreeRead, 60, 1000.0 / 60, 0},
		// rwsem: 3 shared acquisitions per op at 50 ns a transfer: S 300 ns
		{"rwsem", reads(3*ops, 60*ops), tr("rwsem"), ClassTreeRead, 300, 1000.0 / 300, 0},
		// bravo: 2 of the 3 took the fast path: S 100 ns
		{"bravo fast", func() locking.Stats { s := reads(3*ops, 60*ops); s.ReadFast = 2 * ops; return s }(), tr("bravo"), ClassTreeRead, 100, 10, 0},
		// rcu: scoped readers, no writer: never binds
		{"rcu", reads(3*ops, 60*ops), tr("rcu"), "", 0, inf, 0},
		// none: readers uncounted
		{"none", locking.Stats{}, tr("none"), "", 0, inf, 0},
		// rwsem with writers holding 500 ns per op: the write side binds at 2
		{"rwsem writers", func() locking.Stats {
			s := reads(ops, 20*ops)
			s.WriteAcquisitions, s.WriteHeld = ops/10, 500*ops
			return s
		}(), tr("rwsem"), ClassTreeWrite, 500, 2, 0},
		// kernfs74: one tree read per op (a lookup), two attribute reads
		// and 2 ns of attribute writes per op: attr S 2*2*50+2 = 202 ns
		{"kernfs74", func() locking.Stats {
			s := reads(ops, 20*ops)
			s.Attr = locking.LockCounts{ReadAcquisitions: 2 * ops, ReadHeld: 40 * ops, WriteAcquisitions: 1, WriteHeld: 2 * ops}
			s.OpenFile = locking.LockCounts{WriteAcquisitions: 2 * ops, WriteHeld: 30 * ops}
			return s
		}(), tr("kernfs74"), ClassAttr, 202, 1000.0 / 202, 0},
		// kernfs64 opening one file: 2 open-file acquisitions of 300 ns
		// per op bind at 1000/600; spread over 4 files at 1000/150
		{"kernfs64 one file", func() locking.Stats {
			s := reads(ops, 20*ops)
			s.OpenFile = locking.LockCounts{WriteAcquisitions: 2 * ops, WriteHeld: 600 * ops}
			return s
		}(), tr("kernfs64"), ClassOpenFile, 600, 1000.0 / 600, 1},
		{"kernfs64 four files", func() locking.Stats {
			s := reads(ops, 20*ops)
			s.OpenFile = locking.LockCounts{WriteAcquisitions: 2 * ops, WriteHeld: 600 * ops}
			return s
		}(), tr("kernfs64"), ClassOpenFile, 150, 1000.0 / 150, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := BindingOf(c.stats, ops, time.Microsecond, c.traits, 50*time.Nanosecond, c.files)
			if b.Busiest != c.busiest || math.Abs(b.BindCPUs-c.bind) > 1e-9 && !(math.IsInf(b.BindCPUs, 1) && math.IsInf(c.bind, 1)) {
				t.Fatalf("got busiest %q binding at %g, want %q at %g (%+v)", b.Busiest, b.BindCPUs, c.busiest, c.bind, b.Classes)
			}
			for _, cl := range b.Classes {
				if cl.Class == c.busiest && cl.Serial != c.serial {
					t.Fatalf("%s: got S %v, want %v", cl.Class, cl.Serial, c.serial)
				}
			}
			want := 2
			if c.traits.SeparateAttrLock {
				want = 4
			}
			if len(b.Classes) != want {
				t.Fatalf("got %d classes, want %d: %+v", len(b.Classes), want, b.Classes)
			}
		})
	}
	if b := BindingOf(reads(1, 1), 0, time.Microsecond, tr("mutex"), 0, 0); !math.IsInf(b.BindCPUs, 1) || b.Classes != nil {
		t.Fatalf("no operations: got %+v, want no classes, +Inf", b)
	}
}

// TestLineTransferMeasured: the measurement gives a time up to
// maxLineTransfer where two Ps can run at once (0 if the machine was too
// busy), and 0 with one P.
func TestLineTransferMeasured(t *testing.T) {
	got := measureLineTransfer()
	t.Logf("line transfer: %v (0: too busy to measure)", got)
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		if got != 0 {
			t.Fatalf("one P: got %v, want 0", got)
		}
		return
	}
	if got < 0 || got > maxLineTransfer {
		t.Fatalf("got %v, want 0 (too busy) to %v", got, maxLineTransfer)
	}
}
