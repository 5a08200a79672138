package uring

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Handoff: no handler can stall its queue.
//
// A request is served inline, on the thread that leads its queue's ring,
// so the fast path has no wake-up and no goroutine. A handler may wait,
// though, for anything: another request (a lookup that waits for a
// second lookup, a lock manager), a grace period, the kernel. If the
// other request comes from the same CPU, it sits in this very ring,
// behind the handler that waits for it.
//
// So a queue has several threads, all pinned to its CPU, and a lead word
// holds a generation, which every takeover advances, and what its leader
// is doing:
//
//	leadRing    the leader is in the ring's code (waiting, reaping,
//	            committing)
//	leadServing the leader is inside a handler
//	leadTaken   the watchdog took the lead from a handler that was still
//	            running after one watch period (interrupt.go)
//
// Only the leader moves leadRing → leadServing and, when its handler
// returns, back with a CAS. Only the watchdog moves leadServing →
// leadTaken, with a CAS that also advances the generation, and then wakes
// a parked thread of the queue (or starts one) that stores leadRing and
// leads from then on. The two CASes decide who commits the request: if
// the leader's CAS wins, it commits inline as always; if the watchdog's
// wins, the old leader hands its reply to the new one (handBack), as a
// WRITE's goroutine does, and parks. The generation is what makes the old
// leader's CAS fail when the new leader is itself inside a handler by
// then: without it, both would lead the ring (an ABA), each registering
// and committing entries the other had.
// Every ring and queue field marked "leader only" passes between the
// threads through these atomics, so the new leader sees what the old one
// did (Go's atomics are sequentially consistent).
//
// Threads per queue are bounded by its entries: each thread but the
// leader holds one. A ring with deferred task work (Config.DeferTaskRun)
// may only be entered by its creator, so its lead is never taken: such a
// queue keeps the hazard, as its doc says.
const (
	leadRing uint64 = iota
	leadServing
	leadTaken

	leadState = 3 // the state's bits of the lead word; the generation is above them
)

// leadWord is the lead word of generation gen in state.
func leadWord(gen, state uint64) uint64 { return gen<<2 | state }

// errLostLead ends a thread's loop when the watchdog gave its queue's
// lead to another thread.
var errLostLead = errors.New("the lead was taken while serving")

// worker is one OS thread of a queue.
type worker struct {
	// Shared with the watchdog.
	serving atomic.Uint64 // unique of the request being served inline, 0 if none; | interruptedBit
	caller  atomic.Uint32 // its caller's thread id
	// cancel is the channel passed to the file system for the request
	// being served: closed by the watchdog only, replaced by the worker
	// (end) once closed.
	cancel atomic.Pointer[chan struct{}]
	seen   uint64       // serving, less interruptedBit, at the watchdog's last tick; watchdog only
	qi     atomic.Int32 // the qid index (queue.qids) of the request being served inline

	wake chan bool // a parked worker's call: true to lead, false to end

	// Own thread only.
	enterFD, enterFlags uintptr // this thread's way into the ring (ring.registerRing)
	entered             bool
	lost                bool   // the watchdog took the lead while this thread served
	gen                 uint64 // the lead word's generation while this thread leads
}

// handoff is the part of a queue that passes the lead between threads.
type handoff struct {
	lead     atomic.Uint64          // leadWord(generation, leadRing, leadServing or leadTaken)
	leader   atomic.Pointer[worker] // the thread leading, or about to
	handoffs atomic.Uint64          // leads taken from a blocked handler
	grown    atomic.Uint64          // entries registered after the first depth (grow)

	threads *sync.WaitGroup // every thread of every queue; the ringSet's
	fatal   func(error)     // the ringSet's: the ring failed while serving

	mu      sync.Mutex
	workers atomic.Pointer[[]*worker] // every thread of the queue; replaced under mu, read by the watchdog
	spare   []*worker                 // parked threads; protected by mu
	closed  bool                      // teardown has begun: a thread parks no more; protected by mu
}

// newWorker adds the calling thread to the queue.
func (q *queue) newWorker() *worker {
	w := &worker{wake: make(chan bool, 1)}
	w.cancel.Store(new(make(chan struct{})))
	q.mu.Lock()
	var all []*worker
	if p := q.workers.Load(); p != nil {
		all = append(all, *p...)
	}
	all = append(all, w)
	q.workers.Store(&all)
	q.mu.Unlock()
	q.leader.CompareAndSwap(nil, w)
	return w
}

// enterRing makes w's thread the one that enters r.
func (w *worker) enterRing(r *ring) {
	if !w.entered {
		w.enterFD, w.enterFlags = r.registerRing()
		w.entered = true
	}
	r.enterFD, r.enterFlags = w.enterFD, w.enterFlags
}

// serveInline serves the request in entry e on w's thread and commits
// it, unless the watchdog took the lead meanwhile: then it hands the
// reply to the new leader and returns false.
// Preconditions: w leads the queue.
func (q *queue) serveInline(w *worker, e int) bool {
	ent := q.ents[e]
	in := copyHeader(ent)
	w.begin(in.Unique, in.Pid)
	w.qi.Store(int32(ent.qi))
	q.lead.Store(leadWord(w.gen, leadServing))
	unique := q.answer(ent, in, *w.cancel.Load())
	w.end()
	if q.lead.CompareAndSwap(leadWord(w.gen, leadServing), leadWord(w.gen, leadRing)) {
		q.commit(e, unique)
		return true
	}
	w.lost = true
	q.handBack(e, unique) // takeOver counted it in its qid's busy and in offLead
	return false
}

// serveLeading serves as w's queue's leader until the connection ends, parking
// whenever the lead is taken and leading again when woken; the thread
// that leads when the loop ends tears the queue down.
func (q *queue) serveLeading(w *worker) {
	for {
		if w.lost && !q.park(w) {
			return
		}
		err := q.loop(w)
		if errors.Is(err, errLostLead) {
			continue
		}
		if err != nil && !isEBADF(err) {
			q.fatal(err)
		}
		q.teardown()
		return
	}
}

// parkIdle is how long a parked thread waits to be needed before it ends:
// the threads a burst of blocked handlers added go again once it is over.
const parkIdle = time.Second

// park waits, off the ring, until the queue needs w's thread to lead
// (true), or ends (false): the queue ends, or parkIdle passes unneeded.
func (q *queue) park(w *worker) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.spare = append(q.spare, w)
	q.mu.Unlock()
	idle := time.NewTimer(parkIdle)
	defer idle.Stop()
	select {
	case lead := <-w.wake:
		if !lead {
			return false
		}
	case <-idle.C:
		q.mu.Lock()
		if i := slices.Index(q.spare, w); i >= 0 {
			q.spare = slices.Delete(q.spare, i, i+1)
			q.dropWorkerLocked(w)
			q.mu.Unlock()
			return false
		}
		q.mu.Unlock()
		// A takeover or the queue's end took w off spare meanwhile, and
		// its call is on the way.
		if !<-w.wake {
			return false
		}
	}
	q.becomeLeader(w)
	return true
}

// dropWorkerLocked takes w off the watchdog's list of the queue's threads.
// Preconditions: q.mu is held.
func (q *queue) dropWorkerLocked(w *worker) {
	var rest []*worker
	for _, x := range *q.workers.Load() {
		if x != w {
			rest = append(rest, x)
		}
	}
	q.workers.Store(&rest)
}

// becomeLeader makes w's thread the queue's leader after a takeover.
func (q *queue) becomeLeader(w *worker) {
	w.lost = false
	q.leader.Store(w)
	w.enterRing(q.ring)
	w.gen = q.lead.Load() >> 2
	q.lead.Store(leadWord(w.gen, leadRing))
}

// takeOver gives the lead to another thread if the leader is still
// serving; called by the watchdog only. The request being served is
// counted in offLead before the CAS, so that its handBack can never come
// first; in its qid's busy after, since only a CAS that succeeded says
// which request that is (the leader stores qi before leadServing, and
// cannot store it again until its own CAS, which now fails).
func (q *queue) takeOver() {
	v := q.lead.Load()
	if v&leadState != leadServing {
		return
	}
	q.offLead.add()
	if !q.lead.CompareAndSwap(v, leadWord(v>>2+1, leadTaken)) {
		q.offLead.done()
		return
	}
	q.qids[q.leader.Load().qi.Load()].busy.Add(1)
	q.handoffs.Add(1)
	q.mu.Lock()
	var w *worker
	if n := len(q.spare); n > 0 {
		w, q.spare = q.spare[n-1], q.spare[:n-1]
	}
	q.mu.Unlock()
	if w != nil {
		w.wake <- true
		return
	}
	q.threads.Add(1) // a thread of this queue is alive (the old leader), so the count is above zero
	go func() {
		defer q.threads.Done()
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		w := q.newWorker()
		q.pin() // an offline CPU (EINVAL) has no requests to serve
		q.becomeLeader(w)
		q.serveLeading(w)
	}()
}

// cancelAll cancels every request the queue's threads are serving inline
// and every one served on a goroutine of its own, as the watchdog cancels
// an interrupted one. Called once, by ringSet.end.
func (q *queue) cancelAll() {
	close(q.gone)
	ws := q.workers.Load()
	if ws == nil {
		return
	}
	for _, w := range *ws {
		u := w.serving.Load()
		cancel := w.cancel.Load() // after u, as in watch: a CAS that succeeds proves it is u's
		if u != 0 && u&interruptedBit == 0 && w.serving.CompareAndSwap(u, u|interruptedBit) {
			close(*cancel)
		}
	}
}

// retire ends the queue's parked threads and makes any thread that
// parks later end at once. Called by the leader's teardown, after every
// request served off the lead has been handed back.
func (q *queue) retire() {
	q.mu.Lock()
	q.closed = true
	for _, w := range q.spare {
		w.wake <- false
	}
	q.spare = nil
	q.mu.Unlock()
}

// pending counts requests still being served off the lead. A
// sync.WaitGroup does not fit: the watchdog adds to it while the leader
// may be about to wait.
type pending struct {
	mu   sync.Mutex
	cond sync.Cond
	n    int // protected by mu
}

func (p *pending) add() {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
}

func (p *pending) done() {
	p.mu.Lock()
	p.n--
	if p.n == 0 && p.cond.L != nil {
		p.cond.Broadcast()
	}
	p.mu.Unlock()
}

// wait returns once the count is zero.
func (p *pending) wait() {
	p.mu.Lock()
	if p.cond.L == nil {
		p.cond.L = &p.mu
	}
	for p.n > 0 {
		p.cond.Wait()
	}
	p.mu.Unlock()
}
