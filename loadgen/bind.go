package loadgen

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernfsim/kernfsim/locking"
)

// Where a design binds: from one run's lock counters, the CPU count at
// which each of its lock classes alone would cap throughput.
//
// Each class is a single server: an operation occupies it for S, its
// serial time per operation, and one CPU issues an operation every T,
// the single phase's per-op, so it saturates at
//
//	CPUs_bind = T / S
//
// S is an exclusive side's hold time, two line transfers (LineTransfer)
// per acquisition of a shared read side whose readers write one line, and
// nothing for readers that write no shared line. The model's sources and
// assumptions are in docs/performance.md ("Where each design binds").

// openFileMutexes is how many open-file mutexes kernfs hashes files onto
// (NR_KERNFS_LOCKS on a kernel built for 32 CPUs or more).
const openFileMutexes = 1024

// Lock classes, as compare names them.
const (
	ClassTreeRead  = "tree-read"
	ClassTreeWrite = "tree-write"
	ClassAttr      = "attr"
	ClassOpenFile  = "open-file"
)

// ClassUse is one lock class's use per operation over a phase.
type ClassUse struct {
	Class        string
	Acquisitions float64       // per operation
	Held         time.Duration // hold time per operation (summed over holders where shared)
	Serial       time.Duration // serial time per operation, S
	// BindCPUs is T/S; +Inf where S is 0 (the class never binds).
	BindCPUs float64
}

// Binding is where a run's design binds: each class's use and the
// smallest CPUs_bind, the busiest class's.
type Binding struct {
	OpTime       time.Duration // T: the single phase's per-op
	LineTransfer time.Duration // the line transfer time the shared sides were priced at
	Classes      []ClassUse    // tree-read, tree-write, then attr and open-file where the strategy has them
	Busiest      string        // the class with the smallest BindCPUs; "" if none binds
	BindCPUs     float64       // the busiest class's; +Inf if none binds
}

// BindingOf is the model's answer for a phase's lock use u over ops
// operations, each taking opTime on one CPU, under a strategy with
// traits tr, with shared lines priced at line; the operations opened
// files distinct files between them (0 if none or unknown: one). It is
// pure arithmetic (TestBindingOf).
func BindingOf(u locking.Stats, ops int64, opTime time.Duration, tr locking.Traits, line time.Duration, files int) Binding {
	b := Binding{OpTime: opTime, LineTransfer: line, BindCPUs: math.Inf(1)}
	if ops <= 0 || opTime <= 0 {
		return b
	}
	per := func(n int64) float64 { return float64(n) / float64(ops) }
	perD := func(d time.Duration) time.Duration { return d / time.Duration(ops) }
	sharedAcq := func(c locking.LockCounts, fast int64) time.Duration {
		return time.Duration(2 * per(c.ReadAcquisitions-fast) * float64(line))
	}
	treeRead := ClassUse{Class: ClassTreeRead, Acquisitions: per(u.ReadAcquisitions), Held: perD(u.ReadHeld)}
	switch {
	case !u.ReadSideCounted || tr.ScopedReads:
	case tr.ExclusiveReads:
		treeRead.Serial = treeRead.Held
	default:
		treeRead.Serial = sharedAcq(u.LockCounts, u.ReadFast)
	}
	classes := []ClassUse{treeRead,
		{Class: ClassTreeWrite, Acquisitions: per(u.WriteAcquisitions), Held: perD(u.WriteHeld), Serial: perD(u.WriteHeld)}}
	if tr.SeparateAttrLock {
		a := u.Attr
		classes = append(classes, ClassUse{Class: ClassAttr, Acquisitions: per(a.ReadAcquisitions + a.WriteAcquisitions),
			Held: perD(a.ReadHeld + a.WriteHeld), Serial: sharedAcq(a, 0) + perD(a.WriteHeld)})
	}
	if tr.OpenFileLocks {
		o := u.OpenFile
		spread := time.Duration(min(max(files, 1), openFileMutexes))
		classes = append(classes, ClassUse{Class: ClassOpenFile, Acquisitions: per(o.WriteAcquisitions),
			Held: perD(o.WriteHeld), Serial: perD(o.WriteHeld) / spread})
	}
	for i := range classes {
		c := &classes[i]
		c.BindCPUs = math.Inf(1)
		if c.Serial > 0 {
			c.BindCPUs = float64(opTime) / float64(c.Serial)
		}
		if c.BindCPUs < b.BindCPUs {
			b.BindCPUs, b.Busiest = c.BindCPUs, c.Class
		}
	}
	b.Classes = classes
	return b
}

// lineTransfer is LineTransfer's measurement, made once.
var lineTransfer = sync.OnceValue(measureLineTransfer)

// LineTransfer is the time one cache line takes to move from one CPU to
// another on this machine, measured once per process: two goroutines
// hand a line back and forth by turns, spinning, timed per window of
// lineWindow round trips, for lineBudget; the fastest window, over its
// hand-overs, is the figure (on a loaded machine most windows include a
// spell where one of the two was not running; the fastest is the one
// the scheduler disturbed least). 0 where it cannot be measured: with
// one P the two never run at once, and on a machine too busy for one
// undisturbed window the figure would be a scheduler's, not a line's.
func LineTransfer() time.Duration { return lineTransfer() }

// lineWindow and lineBudget size the measurement: windows of 100 round
// trips, for 30 ms at most.
const (
	lineWindow = 100
	lineBudget = 30 * time.Millisecond
)

func measureLineTransfer() time.Duration {
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		return 0
	}
	var turn atomic.Int64
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(0); ; i++ {
			for turn.Load() != 2*i+1 {
				if stop.Load() {
					return
				}
			}
			turn.Store(2*i + 2)
		}
	}()
	best := time.Duration(math.MaxInt64)
	deadline := time.Now().Add(lineBudget)
	for i := int64(0); time.Now().Before(deadline); {
		t0 := time.Now()
		for range lineWindow {
			turn.Store(2*i + 1)
			for turn.Load() != 2*i+2 {
			}
			i++
		}
		best = min(best, time.Since(t0))
	}
	stop.Store(true)
	<-done
	if d := best / (2 * lineWindow); d <= maxLineTransfer {
		return d
	}
	return 0 // no window ran undisturbed: too busy to measure
}

// maxLineTransfer is the longest line transfer believed: a cross-socket
// transfer takes some hundreds of nanoseconds; a window slower than this
// was disturbed throughout.
const maxLineTransfer = 2 * time.Microsecond

// Binding is where c's design binds by the model (BindingOf), from the
// run whose CPUs_bind is the median of c's runs, with shared lines priced
// at r.LineTransfer; nil where c's runs have no lock counters or its
// lock is not a strategy.
func (r *CompareResult) Binding(c Cell) *Binding {
	tr, err := locking.TraitsOf(lockName(c.Row.Target.Lock))
	if err != nil {
		return nil
	}
	var bs []Binding
	for _, run := range c.Runs {
		if run.LockUse == nil {
			return nil
		}
		bs = append(bs, BindingOf(run.LockUse.Stats, run.Ops, run.SinglePerOp, tr, r.LineTransfer, run.Files))
	}
	if len(bs) == 0 {
		return nil
	}
	slices.SortStableFunc(bs, func(a, b Binding) int { return cmp.Compare(a.BindCPUs, b.BindCPUs) })
	return &bs[(len(bs)-1)/2]
}

// lockName is the strategy's name in a lock detail ("rcu gp=normal").
func lockName(detail string) string {
	name, _, _ := strings.Cut(detail, " ")
	return name
}
