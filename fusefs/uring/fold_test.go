package uring

import (
	"fmt"
	"log"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// fakeWait bounds every wait of a fake-kernel test: it detects a hang,
// nothing waits on it.
const fakeWait = 30 * time.Second

// fixedFS answers LOOKUP and GETATTR with values computed from the
// request, so that a reply shows which request it answers.
type fixedFS struct{ fuse.RawFileSystem }

func (fixedFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, o *fuse.EntryOut) fuse.Status {
	n, err := strconv.ParseUint(name, 10, 64)
	if err != nil {
		return fuse.ENOENT
	}
	o.NodeId, o.Generation = h.NodeId*1000+n, h.NodeId
	o.Attr.Ino, o.Attr.Mode = o.NodeId, fuse.S_IFREG|0o644
	return fuse.OK
}

func (fixedFS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, o *fuse.AttrOut) fuse.Status {
	o.Attr.Ino, o.Attr.Size, o.Attr.Blocks, o.Attr.Mode = in.NodeId, 3*in.NodeId, in.Fh(), fuse.S_IFREG|0o644
	return fuse.OK
}

// inStruct is the bytes of in-struct v after its fuse_in_header: what
// the kernel puts at hdrOpIn.
func inStruct[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))[inHeaderSize:]
}

// fakeConn is a ring set serving fs against a fake kernel.
type fakeConn struct {
	fk     *fakeKernel
	rs     *ringSet
	logs   *testkit.SyncBuffer // the handler's Logger
	nudges atomic.Int64        // requests the queues' nudges sent
}

// startFake starts and registers queues of geometry g serving fs
// against a fake kernel; when the test ends, the connection is ended and
// the queues must stop.
func startFake(t *testing.T, fs fuse.RawFileSystem, g geometry) *fakeConn {
	t.Helper()
	devFD, err := unix.Eventfd(0, unix.EFD_CLOEXEC) // any fd: the fake only compares it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(devFD) })
	fc := &fakeConn{fk: installFakeKernel(t, g.queues, devFD), logs: &testkit.SyncBuffer{}}
	h := newHandler(fs, &fuse.MountOptions{Logger: log.New(fc.logs, "", 0), Debug: true})
	// What a mount's statx does: one request from the grown qid's CPU.
	h.nudge = func(qid int) {
		fc.nudges.Add(1)
		fc.fk.request(qid, opGetattr, 1, inStruct(&fuse.GetAttrIn{}), nil)
	}
	fc.rs, err = startRings(h, devFD, g, func(err error) { t.Errorf("a queue failed: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fc.end(t)
		fc.fk.check(t)
		if t.Failed() {
			t.Logf("handler log:\n%s", fc.logs.String())
		}
	})
	if err := fc.rs.registerAll(devFD); err != nil {
		t.Fatal(err)
	}
	fc.fk.mu.Lock()
	defer fc.fk.mu.Unlock()
	if !fc.fk.ready {
		t.Fatalf("every queue registered, but the fake kernel's rings are not ready:\n%s", fc.fk.stateLocked())
	}
	return fc
}

// end ends the connection and fails the test if the queues do not all
// stop.
func (fc *fakeConn) end(t *testing.T) {
	t.Helper()
	fc.fk.end()
	select {
	case <-fc.rs.done:
		return
	case <-time.After(fakeWait):
	}
	t.Errorf("the queues did not stop within %v of the connection's end", fakeWait)
	fc.rs.stop()
	select {
	case <-fc.rs.done:
	case <-time.After(fakeWait):
		t.Errorf("the queues did not stop within %v of their stop eventfds either", fakeWait)
	}
}

// await returns the reply on ch, failing the test if none comes.
func (fc *fakeConn) await(t *testing.T, what string, ch <-chan fakeReply) fakeReply {
	t.Helper()
	select {
	case rep := <-ch:
		return rep
	case <-time.After(fakeWait):
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fc.fk.mu.Lock()
	defer fc.fk.mu.Unlock()
	t.Fatalf("%s: no reply within %v\n%s\ngoroutines:\n%s", what, fakeWait, fc.fk.stateLocked(), buf)
	return fakeReply{}
}

// sentReq is a request a test made and what its reply must be.
type sentReq struct {
	qid    int
	op     uint32
	nodeid uint64
	name   uint64 // LOOKUP's name, as a number
	unique uint64
	reply  <-chan fakeReply
}

// send makes a GETATTR (even k) or a LOOKUP (odd k) on qid, its node and
// name derived from qid and k.
func (fc *fakeConn) send(qid, k int) sentReq {
	s := sentReq{qid: qid, nodeid: uint64(qid*100 + k + 2), name: uint64(k)}
	if k%2 == 0 {
		s.op = opGetattr
		in := fuse.GetAttrIn{Flags_: fuse.FUSE_GETATTR_FH, Fh_: s.nodeid + 7}
		s.unique, s.reply = fc.fk.request(qid, opGetattr, s.nodeid, inStruct(&in), nil)
	} else {
		s.op = opLookup
		s.unique, s.reply = fc.fk.request(qid, opLookup, s.nodeid, nil, []byte(strconv.Itoa(k)+"\x00"))
	}
	return s
}

// check compares rep with what fixedFS answers to s.
func (s sentReq) check(rep fakeReply) error {
	if rep.unique != s.unique || rep.status != 0 {
		return fmt.Errorf("qid %d: reply unique %d status %v, want %d OK", s.qid, rep.unique, errnoStatus(rep.status), s.unique)
	}
	switch s.op {
	case opGetattr:
		var o fuse.AttrOut
		if len(rep.payload) != int(unsafe.Sizeof(o)) {
			return fmt.Errorf("qid %d: GETATTR reply of %d bytes, want %d", s.qid, len(rep.payload), unsafe.Sizeof(o))
		}
		o = *(*fuse.AttrOut)(unsafe.Pointer(&rep.payload[0]))
		if o.Ino != s.nodeid || o.Size != 3*s.nodeid || o.Blocks != s.nodeid+7 || o.AttrValid != 0 {
			return fmt.Errorf("qid %d: GETATTR of node %d answered %+v", s.qid, s.nodeid, o)
		}
	case opLookup:
		var o fuse.EntryOut
		if len(rep.payload) != int(unsafe.Sizeof(o)) {
			return fmt.Errorf("qid %d: LOOKUP reply of %d bytes, want %d", s.qid, len(rep.payload), unsafe.Sizeof(o))
		}
		o = *(*fuse.EntryOut)(unsafe.Pointer(&rep.payload[0]))
		if want := s.nodeid*1000 + s.name; o.NodeId != want || o.Generation != s.nodeid || o.Ino != want || o.EntryValid != 0 {
			return fmt.Errorf("qid %d: LOOKUP of %d in node %d answered %+v", s.qid, s.name, s.nodeid, o)
		}
	}
	return nil
}

// TestFoldedQueues serves 448 qids (a 448-CPU host's) folded onto 8
// rings against the fake kernel, with several requests on every qid at
// once, and checks every reply; that every qid registered its entries,
// all on ring qid mod 8; that the threads that entered the rings are
// bounded by the rings (plus the leads taken from a handler, which under
// load may happen), not by the qids; and that the queues end with the
// connection.
//
// With DeferTaskRun, only the thread that set a ring up may enter it
// (the fake answers EEXIST to any other, as the kernel does), so no lead
// is ever taken and exactly one thread per ring enters.
func TestFoldedQueues(t *testing.T) {
	for _, deferTW := range []bool{false, true} {
		t.Run(fmt.Sprint("defer=", deferTW), func(t *testing.T) { testFoldedQueues(t, deferTW) })
	}
}

func testFoldedQueues(t *testing.T, deferTW bool) {
	const queues, rings, perQID, depth, senders = 448, 8, 4, 2, 4
	g := geometry{queues: queues, rings: rings, depth: depth, payload: minPayload, maxEnts: 16, deferTW: deferTW}
	fc := startFake(t, fixedFS{fuse.NewDefaultRawFileSystem()}, g)

	if len(fc.rs.queues) != rings {
		t.Fatalf("%d rings serve %d qids, want %d", len(fc.rs.queues), queues, rings)
	}
	for qid, n := range fc.fk.registered() {
		if n != depth {
			t.Errorf("qid %d registered %d entries, want %d", qid, n, depth)
		}
	}
	checkFolding(t, fc.fk.qidsByRing(t), queues, rings)

	var mu sync.Mutex
	var sent []sentReq // protected by mu
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for qid := w; qid < queues; qid += senders {
				for k := range perQID {
					s := fc.send(qid, k)
					mu.Lock()
					sent = append(sent, s)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, s := range sent {
		if err := s.check(fc.await(t, fmt.Sprintf("request %d on qid %d", s.unique, s.qid), s.reply)); err != nil {
			t.Error(err)
		}
	}
	var served uint64
	for _, n := range fc.rs.served() {
		served += n
	}
	// A nudge's GETATTR may still be on its way: the count lies between.
	if want := uint64(queues * perQID); served < want || served > want+uint64(fc.nudges.Load()) {
		t.Errorf("the rings served %d requests, want %d and at most the %d nudges more", served, want, fc.nudges.Load())
	}
	// Threads first: a takeover is counted before its thread enters.
	n := fc.fk.threads()
	taken, grown := fc.rs.handoffs()
	if deferTW && taken != 0 {
		t.Errorf("%d leads taken from rings with deferred task work, want none", taken)
	}
	if n > rings+int(taken) || n < rings {
		t.Errorf("%d threads entered the rings, want %d (one per ring) plus at most %d (leads taken)", n, rings, taken)
	}
	t.Logf("%d qids on %d rings, %d threads entered them, leads taken %d, entries grown %d", queues, rings, n, taken, grown)
}

// checkFolding checks that ring r of rings registered exactly the qids
// r, r+rings, ... below queues.
func checkFolding(t *testing.T, byRing map[int][]int, queues, rings int) {
	t.Helper()
	if len(byRing) != rings {
		t.Errorf("%d rings registered entries, want %d", len(byRing), rings)
	}
	seen := map[int]bool{}
	for fd, qids := range byRing {
		r := qids[0] % rings
		var want []int
		for qid := r; qid < queues; qid += rings {
			want = append(want, qid)
		}
		if !slices.Equal(qids, want) || seen[r] {
			t.Errorf("ring %d registered qids %v, want those of ring %d (%d of them, each %d mod %d)", fd, qids, r, len(want), r, rings)
		}
		seen[r] = true
	}
}

// meetFS's LOOKUPs each wait until n have arrived (go-fuse's
// TestNodeParallelLookup has n = 2): handlers that wait for other
// requests. A LOOKUP still waiting after fakeWait answers ETIMEDOUT,
// which fails the test instead of hanging it.
type meetFS struct {
	fuse.RawFileSystem
	n       int
	mu      sync.Mutex
	arrived int           // protected by mu
	all     chan struct{} // closed when arrived reaches n
}

func (f *meetFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, o *fuse.EntryOut) fuse.Status {
	f.mu.Lock()
	f.arrived++
	if f.arrived == f.n {
		close(f.all)
	}
	f.mu.Unlock()
	select {
	case <-f.all:
	case <-time.After(fakeWait):
		return fuse.Status(unix.ETIMEDOUT)
	}
	o.NodeId, o.Attr.Mode = h.NodeId+1, fuse.S_IFREG|0o644
	return fuse.OK
}

// TestFakeHandlerWaitsForAnother: two LOOKUPs whose handlers wait for
// each other, on one qid of depth 2, and on two qids folded onto one
// ring, are both answered: the watchdog takes the lead from the first
// handler and another thread serves the second (handoff.go).
func TestFakeHandlerWaitsForAnother(t *testing.T) {
	for _, c := range []struct {
		name          string
		queues, rings int
		qids          []int
	}{
		{"same qid", 4, 4, []int{1, 1}},
		{"folded qids", 16, 2, []int{3, 5}},
		{"eight on a depth-2 qid", 4, 4, []int{1, 1, 1, 1, 1, 1, 1, 1}}, // needs the nudge
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := &meetFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), n: len(c.qids), all: make(chan struct{})}
			fc := startFake(t, fs, geometry{queues: c.queues, rings: c.rings, depth: 2, payload: minPayload, maxEnts: 16})
			var replies []<-chan fakeReply
			for i, qid := range c.qids {
				_, ch := fc.fk.request(qid, opLookup, 1, nil, []byte(fmt.Sprint("f", i, "\x00")))
				replies = append(replies, ch)
			}
			for i, ch := range replies {
				if rep := fc.await(t, fmt.Sprint("lookup ", i), ch); rep.status != 0 {
					t.Errorf("lookup %d on qid %d: %v", i, c.qids[i], errnoStatus(rep.status))
				}
			}
			taken, grown := fc.rs.handoffs()
			if taken == 0 {
				t.Errorf("no lead taken: the lookups did not meet on one ring")
			}
			t.Logf("leads taken %d, entries grown %d", taken, grown)
		})
	}
}

// holdFS's SETATTRs each wait until a LOOKUP of "go" arrives: writers
// that keep their entries (a SETATTR is served off the ring's leader)
// until a reader of their qid is served.
type holdFS struct {
	fuse.RawFileSystem
	arrived chan uint64 // the node of each SETATTR that reached the handler
	goAhead chan struct{}
	once    sync.Once
}

func (f *holdFS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, o *fuse.AttrOut) fuse.Status {
	f.arrived <- in.NodeId
	select {
	case <-f.goAhead:
	case <-time.After(fakeWait):
		return fuse.Status(unix.ETIMEDOUT)
	}
	o.Attr.Ino, o.Attr.Mode = in.NodeId, fuse.S_IFREG|in.Mode&0o7777
	return fuse.OK
}

func (f *holdFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, o *fuse.EntryOut) fuse.Status {
	if name != "go" {
		return fuse.ENOENT
	}
	f.once.Do(func() { close(f.goAhead) })
	o.NodeId, o.Attr.Mode = 99, fuse.S_IFREG|0o644
	return fuse.OK
}

// TestFakeWritersLeaveEntries: six SETATTRs held by their handlers at
// once on a qid of depth 2 still let a LOOKUP of that qid through. Each
// SETATTR is made once the qid has a free entry, as writers arriving
// over time find: the queue grows (grow.go) to keep two entries free of
// held requests. A request made while none is free waits in the kernel,
// and a REGISTER hands it no entry (see TestFakeRegisterFetchesNothing).
func TestFakeWritersLeaveEntries(t *testing.T) {
	const n, qid = 6, 1
	fs := &holdFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), arrived: make(chan uint64, n), goAhead: make(chan struct{})}
	fc := startFake(t, fs, geometry{queues: 4, rings: 4, depth: 2, payload: minPayload, maxEnts: 16})
	in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_MODE, Mode: 0o600}}
	var writes []<-chan fakeReply
	for i := range n {
		fc.waitFree(t, qid)
		_, ch := fc.fk.request(qid, opSetattr, uint64(10+i), inStruct(&in), nil)
		writes = append(writes, ch)
		select {
		case <-fs.arrived:
		case <-time.After(fakeWait):
			t.Fatalf("SETATTR %d did not reach its handler within %v", i, fakeWait)
		}
	}
	fc.waitFree(t, qid)
	_, ch := fc.fk.request(qid, opLookup, 1, nil, []byte("go\x00"))
	if rep := fc.await(t, "lookup", ch); rep.status != 0 {
		t.Errorf("lookup: %v", errnoStatus(rep.status))
	}
	for i, ch := range writes {
		if rep := fc.await(t, fmt.Sprint("SETATTR ", i), ch); rep.status != 0 {
			t.Errorf("SETATTR %d: %v", i, errnoStatus(rep.status))
		}
	}
	if _, grown := fc.rs.handoffs(); grown < n {
		t.Errorf("%d entries grown, want at least %d (n-2 for the writers beyond depth 2, two spare)", grown, n)
	}
}

// waitFree waits until qid has a free entry in the fake kernel.
func (fc *fakeConn) waitFree(t *testing.T, qid int) {
	t.Helper()
	fc.fk.waitFor(t, fakeWait, fmt.Sprintf("a free entry on qid %d", qid), func() bool { return len(fc.fk.qs[qid].avail) > 0 })
}

// TestFakeRegisterFetchesNothing: six SETATTRs made at once on a qid of
// depth 2 take its two entries, and the other four wait in the kernel.
// Once their handlers hold the two, the queue registers more entries;
// the kernel leaves them free while the four still wait (a REGISTER
// fetches no waiting request, fuse_uring_do_register), until the next
// request of that qid is committed (fuse_uring_commit_fetch). Over a
// mount the queue's nudge (grow.go) is that request; here the handler
// has no mount, and the LOOKUP of "go" is.
func TestFakeRegisterFetchesNothing(t *testing.T) {
	const n, qid = 6, 1
	fs := &holdFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), arrived: make(chan uint64, n), goAhead: make(chan struct{})}
	fc := startFake(t, fs, geometry{queues: 4, rings: 4, depth: 2, payload: minPayload, maxEnts: 16})
	in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_MODE, Mode: 0o600}}
	_, writes := fc.fk.requests(qid, opSetattr, []uint64{10, 11, 12, 13, 14, 15}, inStruct(&in), nil)
	fc.fk.waitFor(t, fakeWait, "free entries beside waiting requests", func() bool {
		q := &fc.fk.qs[qid]
		return len(q.avail) > 0 && len(q.waiting) == n-2
	})
	_, ch := fc.fk.request(qid, opLookup, 1, nil, []byte("go\x00"))
	if rep := fc.await(t, "lookup", ch); rep.status != 0 {
		t.Errorf("lookup: %v", errnoStatus(rep.status))
	}
	for i, ch := range writes {
		if rep := fc.await(t, fmt.Sprint("SETATTR ", i), ch); rep.status != 0 {
			t.Errorf("SETATTR %d: %v", i, errnoStatus(rep.status))
		}
	}
}

// stuckFS's SETATTRs and LOOKUPs each wait until release is closed.
type stuckFS struct {
	fuse.RawFileSystem
	arrived chan uint32 // the opcode of each request that reached its handler
	release chan struct{}
}

func (f *stuckFS) stuck(op uint32) fuse.Status {
	f.arrived <- op
	select {
	case <-f.release:
		return fuse.OK
	case <-time.After(fakeWait):
		return fuse.Status(unix.ETIMEDOUT)
	}
}

func (f *stuckFS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, o *fuse.AttrOut) fuse.Status {
	return f.stuck(opSetattr)
}

func (f *stuckFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, o *fuse.EntryOut) fuse.Status {
	return f.stuck(opLookup)
}

// TestFakeEndWhileServing: the connection ends while a SETATTR is held
// off the lead and a LOOKUP's handler has lost the lead; both callers get
// ECONNABORTED at once, the handlers' late replies are refused
// (-ENOTCONN), and every ring still ends, with no thread left behind.
func TestFakeEndWhileServing(t *testing.T) {
	fs := &stuckFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), arrived: make(chan uint32, 2), release: make(chan struct{})}
	fc := startFake(t, fs, geometry{queues: 4, rings: 2, depth: 2, payload: minPayload, maxEnts: 16})
	in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_MODE, Mode: 0o600}}
	_, write := fc.fk.request(1, opSetattr, 10, inStruct(&in), nil)
	_, lookup := fc.fk.request(3, opLookup, 1, nil, []byte("x\x00"))
	for range 2 {
		select {
		case <-fs.arrived:
		case <-time.After(fakeWait):
			t.Fatalf("the requests did not reach their handlers within %v", fakeWait)
		}
	}
	testkit.WaitFor(t, fakeWait, time.Millisecond, func() error {
		if taken, _ := fc.rs.handoffs(); taken == 0 {
			return fmt.Errorf("the blocked LOOKUP kept the lead")
		}
		return nil
	})
	fc.fk.end()
	for _, c := range []struct {
		what string
		ch   <-chan fakeReply
	}{{"SETATTR", write}, {"LOOKUP", lookup}} {
		if rep := fc.await(t, c.what, c.ch); rep.status != -int32(unix.ECONNABORTED) {
			t.Errorf("%s at the connection's end: %v, want %v", c.what, errnoStatus(rep.status), unix.ECONNABORTED)
		}
	}
	close(fs.release)
	select {
	case <-fc.rs.done:
	case <-time.After(fakeWait):
		t.Fatalf("the rings did not end within %v of the connection's end", fakeWait)
	}
}
