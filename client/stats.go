package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/locking"
)

// Stats is one reading of the stats file: the served tree's lock
// strategy, the FUSE server's tables and requests, the tree's nodes and
// teardowns, the lock's counters and the grace periods. Counters count up
// from the server's start; the rest are levels.
type Stats struct {
	Lock string // server.lock: the strategy's name
	// Served is whether the server lines were there: a tree not (yet)
	// served over FUSE has none.
	Served                         bool
	Nodeids, OpenFiles, Goroutines uint64 // server.*
	PollsAfterPrime                uint64 // server.polls_after_prime: any is a defect
	Transport                      string // server.transport: devfuse or uring
	Queues, QueueDepth             uint64 // transport.queues, transport.depth (io_uring)
	DeferTaskRun                   bool   // transport.defer_taskrun: the rings defer their task work (io_uring)
	// transport.handoffs: leads taken from a handler still running after
	// a watch period; transport.entries_grown: entries registered beyond
	// the depth; transport.threads: the queues' threads (io_uring).
	Handoffs, EntriesGrown, TransportThreads uint64
	Requests                                 map[string]uint64 // requests.OPCODE
	// notify.*: kernel cache notifications (fusefs.NotifyStats)
	NotifyQueued, NotifyCoalesced, NotifySent, NotifyPending, NotifyOverflows, NotifyUnwaited uint64
	Nodes                                                                                     uint64 // tree.nodes
	TeardownsQueued                                                                           uint64 // tree.teardowns_queued
	TeardownsCompleted                                                                        uint64 // tree.teardowns_completed

	// lock.read.* and lock.write.*: acquisitions, contentions, wait and
	// hold time per side, as lock_stat gives them (locking.Stats). Held
	// is an estimate from one acquisition in HoldSampleEvery.
	ReadAcquisitions, ReadContended   uint64
	ReadWait, ReadHeld                time.Duration
	WriteAcquisitions, WriteContended uint64
	WriteWait, WriteHeld              time.Duration
	HoldSampleEvery                   uint64 // lock.hold_sample_every: 0 with the counters off
	ReadCounted                       bool   // lock.read.counted: false under none, whose readers take nothing (and without the line)
	ReadFast                          uint64 // lock.read.fast: read acquisitions on a fast path (percpu, bravo)
	// lock.attr.* and lock.open_file.* (kernfs64's and kernfs74's other
	// locks) are in Keys and Values, and in LockStats' Attr and OpenFile.

	GracePeriods, Expedited                         uint64 // grace.*
	GraceLatencyTotal, GraceLatencyMax              time.Duration
	CallbacksQueued, CallbacksRun, CallbacksPending uint64

	// Keys are the file's keys in its order and Values their text, known
	// keys or not: for showing every line as it is.
	Keys   []string
	Values map[string]string
}

// fields maps each known key to where its value goes.
func (s *Stats) fields() map[string]any {
	return map[string]any{
		"transport.queues": &s.Queues, "transport.depth": &s.QueueDepth, "transport.defer_taskrun": &s.DeferTaskRun,
		"transport.handoffs": &s.Handoffs, "transport.entries_grown": &s.EntriesGrown, "transport.threads": &s.TransportThreads,
		"server.nodeids": &s.Nodeids, "server.open_files": &s.OpenFiles, "server.goroutines": &s.Goroutines,
		"server.polls_after_prime": &s.PollsAfterPrime,
		"notify.queued":            &s.NotifyQueued, "notify.coalesced": &s.NotifyCoalesced, "notify.sent": &s.NotifySent,
		"notify.pending": &s.NotifyPending, "notify.overflows": &s.NotifyOverflows, "notify.unwaited": &s.NotifyUnwaited,
		"tree.nodes": &s.Nodes, "tree.teardowns_queued": &s.TeardownsQueued, "tree.teardowns_completed": &s.TeardownsCompleted,
		"lock.read.acquisitions": &s.ReadAcquisitions, "lock.read.contended": &s.ReadContended, "lock.read.wait_ns": &s.ReadWait,
		"lock.read.held_ns":       &s.ReadHeld,
		"lock.write.acquisitions": &s.WriteAcquisitions, "lock.write.contended": &s.WriteContended, "lock.write.wait_ns": &s.WriteWait,
		"lock.write.held_ns":     &s.WriteHeld,
		"lock.hold_sample_every": &s.HoldSampleEvery, "lock.read.counted": &s.ReadCounted,
		"lock.read.fast": &s.ReadFast,
		"grace.periods":  &s.GracePeriods, "grace.expedited": &s.Expedited,
		"grace.latency_total_ns": &s.GraceLatencyTotal, "grace.latency_max_ns": &s.GraceLatencyMax,
		"grace.callbacks_queued": &s.CallbacksQueued, "grace.callbacks_run": &s.CallbacksRun, "grace.callbacks_pending": &s.CallbacksPending,
	}
}

// ErrNotStats is a file without a server.lock line: not kernfsim's stats.
var ErrNotStats = errors.New("not a kernfsim stats file: no server.lock line")

// ParseStats parses the stats file's "key value" lines. It fails if there
// is no server.lock line (not a kernfsim stats file) or a known counter
// is not a number; unknown keys are kept in Keys and Values only.
func ParseStats(b []byte) (Stats, error) {
	s := Stats{Requests: map[string]uint64{}, Values: map[string]string{}}
	fields := s.fields()
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		s.Keys, s.Values[k] = append(s.Keys, k), v
		if err := s.set(fields, k, v); err != nil {
			return Stats{}, err
		}
	}
	if s.Lock == "" {
		return Stats{}, ErrNotStats
	}
	return s, nil
}

// set stores one line's value.
func (s *Stats) set(fields map[string]any, k, v string) error {
	switch k {
	case "server.lock":
		s.Lock = v
		return nil
	case "server.transport":
		s.Transport = v
		return nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if op, ok := strings.CutPrefix(k, "requests."); ok {
		s.Requests[op] = n
	} else if p, known := fields[k]; !known {
		return nil
	} else {
		store(p, n)
	}
	if err != nil {
		return fmt.Errorf("kernfsim stats file: %s %q is not a count", k, v)
	}
	s.Served = s.Served || strings.HasPrefix(k, "server.")
	return nil
}

// store puts n where p points: a count, a duration in nanoseconds, or a
// flag (0 or 1).
func store(p any, n uint64) {
	switch p := p.(type) {
	case *time.Duration:
		*p = time.Duration(n)
	case *bool:
		*p = n != 0
	default:
		*p.(*uint64) = n
	}
}

// ReadStats reads and parses the stats file of the tree mounted at root.
// A read error is returned as it is (ENOTCONN for a dead server,
// fs.ErrNotExist for a mount that is not kernfsim's).
func ReadStats(root string) (Stats, error) {
	b, err := os.ReadFile(filepath.Join(root, StatsPath))
	if err != nil {
		return Stats{}, err
	}
	s, err := ParseStats(b)
	if err != nil {
		return Stats{}, fmt.Errorf("%s: %w", filepath.Join(root, StatsPath), err)
	}
	return s, nil
}

// LockStats is the reading's tree-lock counters as locking.Stats, for Sub and
// Utilization; CountersSwitchedOn where the file gave a hold-time sample
// rate.
func (s Stats) LockStats() locking.Stats {
	return locking.Stats{
		LockCounts: locking.LockCounts{
			ReadAcquisitions: int64(s.ReadAcquisitions), ReadContended: int64(s.ReadContended),
			ReadWait: s.ReadWait, ReadHeld: s.ReadHeld,
			WriteAcquisitions: int64(s.WriteAcquisitions), WriteContended: int64(s.WriteContended),
			WriteWait: s.WriteWait, WriteHeld: s.WriteHeld,
		},
		HoldSampleEvery: int(s.HoldSampleEvery), ReadSideCounted: s.ReadCounted,
		ReadFast: int64(s.ReadFast), CountersSwitchedOn: s.HoldSampleEvery > 0,
		Attr: s.countsOf("lock.attr."), OpenFile: s.countsOf("lock.open_file."),
	}
}

// countsOf is the counters of the lock whose lines start with prefix
// (lock.attr., lock.open_file.), from Values; zero where a line is
// missing or not a number (a strategy without that lock).
func (s Stats) countsOf(prefix string) locking.LockCounts {
	n := func(key string) int64 {
		v, err := strconv.ParseInt(s.Values[prefix+key], 10, 64)
		if err != nil {
			return 0
		}
		return v
	}
	d := func(key string) time.Duration { return time.Duration(n(key)) }
	return locking.LockCounts{
		ReadAcquisitions: n("read.acquisitions"), ReadContended: n("read.contended"),
		ReadWait: d("read.wait_ns"), ReadHeld: d("read.held_ns"),
		WriteAcquisitions: n("write.acquisitions"), WriteContended: n("write.contended"),
		WriteWait: d("write.wait_ns"), WriteHeld: d("write.held_ns"),
	}
}
