package loadgen

import (
	"strconv"
	"sync"
	"time"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// The in-tree control files (sysfs.ABI), relative to the target.
const (
	churnControl = client.NewDevicePath
	churnDelete  = client.DeleteDevicePath
	churnDevices = client.DevicesDir
	// churnSlots is how many device names the churner cycles through.
	churnSlots = 8
	// churnFile is the file of a churned device the workers read: every
	// sysfs device has one.
	churnFile = "uevent"
)

// ChurnResult is what the churner did.
type ChurnResult struct {
	Rate    float64 // asked for, per second
	Adds    int64
	Removes int64
	Elapsed time.Duration
	Errors  []ErrorCount // failed writes: every one is unexpected
}

// Achieved is the changes made per second.
func (c ChurnResult) Achieved() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.Adds+c.Removes) / c.Elapsed.Seconds()
}

// churner adds and removes devices at a rate, cycling through churnSlots
// names: each change adds the slot's device if it is absent, else removes
// it. Its methods are safe on a nil churner (no churn).
type churner struct {
	t       target
	rate    float64
	names   []string
	present []bool // owned by the churner goroutine

	started  bool // set by start, read by finish: both on Run's goroutine
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu   sync.Mutex
	res  ChurnResult // protected by mu
	errs ErrorTally  // protected by mu
}

// newChurner checks that t has the control files and removes devices a
// previous run may have left.
func newChurner(t target, rate float64) (*churner, error) {
	if err := t.stat(t.abs(churnControl)); err != nil {
		return nil, BadConfig("Churn", "churn a kernfsim mount or --sim",
			"%s: %v: the target has no kernfsim device control files", t.abs(churnControl), err)
	}
	c := &churner{t: t, rate: rate, present: make([]bool, churnSlots),
		stop: make(chan struct{}), done: make(chan struct{}), res: ChurnResult{Rate: rate}, errs: ErrorTally{}}
	for i := range churnSlots {
		c.names = append(c.names, "loadgen"+strconv.Itoa(i))
		t.write(churnDelete, client.DeleteDevices(c.names[i])) // ENODEV when absent, as expected
	}
	return c, nil
}

// files are the churned devices' files the workers read.
func (c *churner) files() []string {
	out := make([]string, len(c.names))
	for i, n := range c.names {
		out[i] = c.t.abs(churnDevices + "/" + n + "/" + churnFile)
	}
	return out
}

func (c *churner) start() {
	if c != nil {
		c.started = true
		go c.run()
	}
}

// run makes changes on a ticker so that after t seconds about rate x t
// have been made, catching up at most a tick's worth plus one at a time.
func (c *churner) run() {
	defer close(c.done)
	interval := min(max(time.Duration(float64(time.Second)/c.rate), time.Millisecond), 10*time.Millisecond)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	t0, k := time.Now(), 0
	burst := int(c.rate*interval.Seconds()) + 1
	for {
		select {
		case <-c.stop:
			c.mu.Lock()
			c.res.Elapsed = time.Since(t0)
			c.mu.Unlock()
			return
		case <-tick.C:
		}
		due := int(c.rate * time.Since(t0).Seconds())
		for n := 0; k < due && n < burst; n++ {
			c.step(k % churnSlots)
			k++
		}
	}
}

// step adds slot i's device if it is absent, else removes it.
func (c *churner) step(i int) {
	var err error
	if c.present[i] {
		err = c.t.write(churnDelete, client.DeleteDevices(c.names[i]))
	} else {
		err = c.t.write(churnControl, client.NewDevice(c.names[i], DefaultChurnAttrs))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.errs.Add(kernfsim.Errno(err), false, c.names[i], 1)
	case c.present[i]:
		c.res.Removes++
	default:
		c.res.Adds++
	}
	if err == nil {
		c.present[i] = !c.present[i]
	}
}

// finish stops the churner, removes the devices it left and returns what
// it did; nil without churn. It may be called more than once.
func (c *churner) finish() *ChurnResult {
	if c == nil {
		return nil
	}
	c.stopOnce.Do(func() {
		if c.started {
			close(c.stop)
			<-c.done
		}
		for i := range c.names {
			if c.present[i] {
				c.t.write(churnDelete, client.DeleteDevices(c.names[i]))
			}
		}
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.Errors = c.errs.Sorted()
	return &r
}
