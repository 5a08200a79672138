package loadgen

import (
	"strconv"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/latency"
)

// The writers that change the tree while a run's workers read it: N
// goroutines (Config.Writers), each making its own changes at a rate
// (Config.Churn) and timing each one as it saw it. What a change is
// belongs to a changer: a device added or removed through the in-tree ABI
// (deviceChurn, below), a memory block hot-added (coldplug's prober), a
// container's cgroup made or removed (cgroup's churner).

// The in-tree control files (sysfs.ABI), relative to the target.
const (
	churnControl = client.NewDevicePath
	churnDelete  = client.DeleteDevicePath
	churnDevices = client.DevicesDir
	// churnSlots is how many device names (or containers) each writer
	// cycles through.
	churnSlots = 8
	// churnFile is the file of a churned device the workers read: every
	// sysfs device has one.
	churnFile = "uevent"
)

// ChurnResult is what the writers did.
type ChurnResult struct {
	Rate float64 // asked for, per second and writer
	// Writers is how many wrote. A saved result without the count reads
	// 0, and had one writer.
	Writers int
	Adds    int64
	Removes int64
	Elapsed time.Duration
	// Latency is how long each change took as its writer saw it (one
	// create or delete, from the write's start to its return), over the
	// whole run. It is zero in a saved result without it.
	Latency latency.Latency
	Errors  []errtally.ErrorCount // failed writes: every one is unexpected
}

// Achieved is the changes made per second, every writer's.
func (c ChurnResult) Achieved() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.Adds+c.Removes) / c.Elapsed.Seconds()
}

// changer is what writers change. Writer w calls change(w) from its own
// goroutine only, so state indexed by w is that writer's.
type changer interface {
	// change makes writer w's next change: whether it removed something
	// (else added), the path to name in an error, and its error.
	change(w int) (removed bool, path string, err error)
	// cleanup undoes what the writers leave that should not stay, after
	// they have stopped.
	cleanup()
}

// writerSet runs n writers of one changer, each rate changes a second.
// Its methods are safe on a nil *writerSet (no writers).
type writerSet struct {
	n    int
	rate float64
	ch   changer

	started  bool      // set by start, read by finish: both on Run's goroutine
	t0       time.Time // set by start, before the writers start
	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once

	mu     sync.Mutex              // protects res, errs, all, window and spare
	res    ChurnResult             // protected by mu
	errs   errtally.ErrorTally     // protected by mu
	all    *hdrhistogram.Histogram // every change's latency; protected by mu
	window *hdrhistogram.Histogram // the open phase's; nil when none is open; protected by mu
	spare  *hdrhistogram.Histogram // the window's, kept between phases; protected by mu
}

func newWriterSet(ch changer, n int, rate float64) *writerSet {
	return &writerSet{n: n, rate: rate, ch: ch, stop: make(chan struct{}), res: ChurnResult{Rate: rate, Writers: n},
		errs: errtally.ErrorTally{}, all: latency.NewHistogram(), spare: latency.NewHistogram()}
}

func (s *writerSet) start() {
	if s == nil {
		return
	}
	s.started, s.t0 = true, time.Now()
	for w := range s.n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			paced(s.rate, s.stop, func() { s.step(w) })
		}()
	}
}

// step makes writer w's next change and records it.
func (s *writerSet) step(w int) {
	t0 := time.Now()
	removed, path, err := s.ch.change(w)
	d := time.Since(t0)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.errs.Add(kernfsim.Errno(err), false, path, 1)
		return
	case removed:
		s.res.Removes++
	default:
		s.res.Adds++
	}
	latency.RecordLatency(s.all, d)
	if s.window != nil {
		latency.RecordLatency(s.window, d)
	}
}

// openWindow starts recording a phase's changes apart.
func (s *writerSet) openWindow() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spare.Reset()
	s.window = s.spare
}

// closeWindow ends the phase's window and returns its changes' latency;
// nil without writers.
func (s *writerSet) closeWindow() *latency.Latency {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := latency.Summarize(s.window)
	s.window = nil
	return &l
}

// finish stops the writers, cleans up after them and returns what they
// did; nil without writers. It may be called more than once.
func (s *writerSet) finish() *ChurnResult {
	if s == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		if s.started {
			close(s.stop)
			s.wg.Wait()
			s.mu.Lock()
			s.res.Elapsed = time.Since(s.t0)
			s.mu.Unlock()
		}
		s.ch.cleanup()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res
	r.Errors, r.Latency = s.errs.Sorted(), latency.Summarize(s.all)
	return &r
}

// paced calls step about rate times a second until stop is closed, on a
// ticker, catching up at most a tick's worth plus one at a time.
func paced(rate float64, stop <-chan struct{}, step func()) {
	interval := min(max(time.Duration(float64(time.Second)/rate), time.Millisecond), 10*time.Millisecond)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	t0, k := time.Now(), 0
	burst := int(rate*interval.Seconds()) + 1
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		due := int(rate * time.Since(t0).Seconds())
		for n := 0; k < due && n < burst; n++ {
			step()
			k++
		}
	}
}

// deviceChurn adds and removes devices through bus/kernfsim/new_device
// and delete_device: writer w cycles through churnSlots names of its own,
// each change adding the slot's device if it is absent, else removing it.
type deviceChurn struct {
	t       target
	names   [][]string // per writer, its slots' devices; immutable
	present [][]bool   // row w is writer w's (cleanup's once the writers stopped)
	next    []int      // per writer, its next slot; as present
}

// newDeviceChurn checks that t has the control files and removes the
// devices a previous run may have left; a target without them is bad
// input for field (the Config field that asked for writers). Writer 0's
// devices are loadgen0..loadgen7, writer w's the next churnSlots numbers
// after w-1's.
func newDeviceChurn(t target, writers int, field string) (*deviceChurn, error) {
	if err := t.stat(t.abs(churnControl)); err != nil {
		return nil, setting.NewError(field, "churn a kernfsim mount or {TargetSim}",
			"%s: %v: the target has no kernfsim device control files", t.abs(churnControl), err)
	}
	d := &deviceChurn{t: t, next: make([]int, writers)}
	for w := range writers {
		names := make([]string, churnSlots)
		for i := range names {
			names[i] = "loadgen" + strconv.Itoa(w*churnSlots+i)
			t.write(churnDelete, client.DeleteDevicesLine(names[i])) // ENODEV when absent, as expected
		}
		d.names, d.present = append(d.names, names), append(d.present, make([]bool, churnSlots))
	}
	return d, nil
}

// files are the churned devices' files the workers read.
func (d *deviceChurn) files() []string {
	var out []string
	for _, names := range d.names {
		for _, n := range names {
			out = append(out, d.t.abs(churnDevices+"/"+n+"/"+churnFile))
		}
	}
	return out
}

func (d *deviceChurn) change(w int) (bool, string, error) {
	i := d.next[w] % churnSlots
	d.next[w]++
	name, removed := d.names[w][i], d.present[w][i]
	var err error
	if removed {
		err = d.t.write(churnDelete, client.DeleteDevicesLine(name))
	} else {
		err = d.t.write(churnControl, client.NewDeviceLine(name, DefaultChurnAttrs))
	}
	if err == nil {
		d.present[w][i] = !removed
	}
	return removed, name, err
}

// cleanup removes the devices the writers left.
func (d *deviceChurn) cleanup() {
	for w, names := range d.names {
		for i, n := range names {
			if d.present[w][i] {
				d.t.write(churnDelete, client.DeleteDevicesLine(n))
			}
		}
	}
}
