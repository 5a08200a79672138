package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/pshard"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// Opcodes counted in Stats, in the order they are printed.
var Opcodes = []string{
	"LOOKUP", "FORGET", "GETATTR", "SETATTR", "ACCESS", "READLINK", "OPEN", "READ",
	"WRITE", "RELEASE", "FLUSH", "OPENDIR", "READDIR", "RELEASEDIR", "STATFS",
}

const (
	opLookup = iota
	opForget
	opGetattr
	opSetattr
	opAccess
	opReadlink
	opOpen
	opRead
	opWrite
	opRelease
	opFlush
	opOpendir
	opReaddir
	opReleasedir
	opStatfs
	numOps
)

const statShards = 16

// statShard is one CPU-spread copy of the per-opcode counters, followed by
// a line's worth of padding, so that two shards never share a cache line
// (or an adjacent-line pair) whatever the allocation's alignment.
type statShard struct {
	n [numOps]atomic.Uint64
	_ [128]byte
}

// Stats counts requests by opcode. A request adds to its P's shard
// (pshard), so requests on different CPUs write different cache lines.
//
// The shards are a slice, not an array inside Stats. As an array, with
// the same shards and the same per-P choice, two CPUs' adds were slower
// than one CPU's, as if they shared a line; why was not found
// (BenchmarkStatsCount).
type Stats struct {
	shards []statShard // immutable slice of statShards shards
}

func newStats() *Stats { return &Stats{shards: make([]statShard, statShards)} }

func (s *Stats) count(op int) {
	s.shards[pshard.Of(statShards-1)].n[op].Add(1)
}

// Requests returns the number of requests per opcode, indexed as Opcodes.
func (s *Stats) Requests() []uint64 {
	out := make([]uint64, numOps)
	for i := range s.shards {
		for op := range out {
			out[op] += s.shards[i].n[op].Load()
		}
	}
	return out
}

// PollsAfterPrime is the number of FUSE POLL requests that reached the
// server after the mount's POLL prime: any is a defect, since a POLL
// that an in-process client's epoll_ctl waits for can deadlock it with
// the garbage collector. Only the io_uring queues see POLL; over
// /dev/fuse go-fuse answers it (ENOSYS) without telling the server, and
// a prime that succeeded proves none is sent (no_poll is per connection
// and never cleared), so it is 0 there.
func (s *Server) PollsAfterPrime() uint64 {
	ti := s.transport.Load()
	if ti == nil {
		return 0
	}
	return ti.srv.Polls() - ti.primedPolls.Load()
}

// Stats returns the server's request counters.
func (s *Server) Stats() *Stats { return s.stats }

// StatsFile is the contents of kernel/kernfsim/stats: the server's request
// counters, the tree's lock counters (showLock) and grace-period engine,
// and the nodeid table size, one "key value" line each. It is created
// before the server (the file must exist before a none tree is sealed),
// and MountTree binds it to the server it names in MountOptions.Stats.
type StatsFile struct {
	tree *kernfsim.Tree
	srv  atomic.Pointer[Server]
}

// NewStatsFile returns the stats source for tree.
func NewStatsFile(tree *kernfsim.Tree) *StatsFile { return &StatsFile{tree: tree} }

// StatsSource is NewStatsFile as a plain source, for building a tree
// whose stats file no server reads yet (it shows the tree's counters).
func StatsSource(tree *kernfsim.Tree) kernfsim.Source { return NewStatsFile(tree) }

// bind makes the file show s's counters.
func (f *StatsFile) bind(s *Server) { f.srv.Store(s) }

func (f *StatsFile) Show(_ context.Context, buf *bytes.Buffer) error {
	st := f.tree.Strategy()
	ls := st.Stats()
	line := lineWriter(buf)
	line("server.lock", st.Name())
	if s := f.srv.Load(); s != nil {
		line("server.nodeids", s.Nodeids())
		line("server.open_files", s.OpenFiles())
		line("server.goroutines", runtime.NumGoroutine())
		line("server.polls_after_prime", s.PollsAfterPrime())
		if ti := s.transport.Load(); ti != nil {
			line("server.transport", ti.srv.Transport())
			if ti.srv.Transport() == uring.URing {
				line("transport.queues", ti.srv.Queues())
				line("transport.depth", ti.srv.Depth())
				line("transport.defer_taskrun", boolDigit(ti.srv.DeferTaskRun()))
				taken, grown := ti.srv.Handoffs()
				line("transport.handoffs", taken)
				line("transport.entries_grown", grown)
				line("transport.threads", ti.srv.Threads())
				for q, n := range ti.srv.Served() {
					line(fmt.Sprintf("transport.queue%d.requests", q), n)
				}
			}
		}
		for i, n := range s.stats.Requests() {
			line("requests."+Opcodes[i], n)
		}
		ns := s.NotifyStats()
		line("notify.queued", ns.Queued)
		line("notify.coalesced", ns.Coalesced)
		line("notify.sent", ns.Sent)
		line("notify.pending", ns.Pending)
		line("notify.overflows", ns.Overflows)
		line("notify.unwaited", ns.Unwaited)
	}
	line("tree.nodes", f.tree.Nodes())
	td := f.tree.Teardowns()
	line("tree.teardowns_queued", td.Queued)
	line("tree.teardowns_completed", td.Completed)
	showLock(line, ls, st.Traits())
	g := ls.Grace
	line("grace.periods", g.GracePeriods)
	line("grace.expedited", g.Expedited)
	line("grace.latency_total_ns", g.LatencyTotal.Nanoseconds())
	line("grace.latency_max_ns", g.LatencyMax.Nanoseconds())
	line("grace.callbacks_queued", g.CallbacksQueued)
	line("grace.callbacks_run", g.CallbacksRun)
	line("grace.callbacks_pending", g.Pending)
	return nil
}

// lineWriter writes the file's "key value" lines to buf.
func lineWriter(buf *bytes.Buffer) func(k string, v any) {
	return func(k string, v any) { fmt.Fprintf(buf, "%s %v\n", k, v) }
}

// showLock writes the lock's lines: per side, acquisitions, contentions,
// wait time and the estimated hold time (lock_stat's), then the hold
// time's sample rate (0 with the counters off), whether the read side
// is counted at all (0 under none, whose readers take nothing), the read
// acquisitions that took a fast path (percpu, bravo), and the counters of
// the strategy's other locks: kernfs64's attribute rwsem (lock.attr.*)
// and hashed open-file mutexes (lock.open_file.write.*).
func showLock(line func(k string, v any), ls locking.Stats, t locking.Traits) {
	showCounts(line, "lock.", ls.LockCounts, true)
	line("lock.hold_sample_every", ls.HoldSampleEvery)
	line("lock.read.counted", boolDigit(ls.ReadSideCounted))
	line("lock.read.fast", ls.ReadFast)
	if t.SeparateAttrLock {
		showCounts(line, "lock.attr.", ls.Attr, true)
	}
	if t.OpenFileLocks {
		showCounts(line, "lock.open_file.", ls.OpenFile, false)
	}
}

// showCounts writes one lock's lines under prefix (lock. for the tree
// lock's): its read side's if it has one, then its write side's.
func showCounts(line func(k string, v any), prefix string, c locking.LockCounts, read bool) {
	if read {
		line(prefix+"read.acquisitions", c.ReadAcquisitions)
		line(prefix+"read.contended", c.ReadContended)
		line(prefix+"read.wait_ns", c.ReadWait.Nanoseconds())
		line(prefix+"read.held_ns", c.ReadHeld.Nanoseconds())
	}
	line(prefix+"write.acquisitions", c.WriteAcquisitions)
	line(prefix+"write.contended", c.WriteContended)
	line(prefix+"write.wait_ns", c.WriteWait.Nanoseconds())
	line(prefix+"write.held_ns", c.WriteHeld.Nanoseconds())
}

// boolDigit is b as the file writes a flag: 1 or 0.
func boolDigit(b bool) int {
	if b {
		return 1
	}
	return 0
}
