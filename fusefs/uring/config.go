package uring

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Kind is how requests reach a Server.
type Kind string

const (
	// Auto, the zero Kind, is io_uring where it can be had and /dev/fuse
	// elsewhere. It names a choice, never a Server's Transport.
	Auto Kind = ""
	// DevFuse is go-fuse's own loop, reading requests from /dev/fuse.
	DevFuse Kind = "devfuse"
	// URing is FUSE-over-io_uring: one queue per possible CPU.
	URing Kind = "uring"
)

// Kinds lists every Kind, Auto first.
var Kinds = []Kind{Auto, DevFuse, URing}

// String is the kind's name: "auto", "devfuse" or "uring".
func (k Kind) String() string {
	if k == Auto {
		return "auto"
	}
	return string(k)
}

// ParseKind returns the Kind that String names s.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if k.String() == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("uring: no transport %q: valid values are auto, devfuse, uring", s)
}

// Config configures what NewServer adds to go-fuse's MountOptions.
type Config struct {
	// Only, if set, is the one transport NewServer may use: with
	// DevFuse it never tries io_uring; with URing it fails where
	// io_uring cannot be had instead of falling back to /dev/fuse.
	// Auto, the default, tries io_uring and falls back.
	Only Kind

	// Depth is the number of requests a queue holds at once; 0 means
	// DefaultDepth.
	Depth int

	// MaxPinnedBytes, if positive, caps PinnedBytes. The kernel needs a
	// queue for every possible CPU (fs/fuse/dev_uring.c sends a request
	// to the queue of the CPU it was issued on, and uses the ring only
	// once every queue has registered), and every entry a payload of
	// max(MaxWrite, 8 KiB); so the cap lowers Depth first, to no less
	// than 1, then MaxWrite, to no less than 8 KiB (which also lowers
	// the largest READ and WRITE the kernel sends). If even that does
	// not fit, the connection is served over /dev/fuse (with Only:
	// URing, NewServer fails). A depth of 1 serialises each CPU's
	// requests, a WRITE or SETATTR in progress included.
	MaxPinnedBytes int64

	// HoldP, if set, makes a busy queue thread wait for its next
	// request holding its P, so the Go runtime's monitor never takes the
	// P back and is not woken to do so; while the queues live,
	// GOMAXPROCS is one higher per queue, so that the rest of the process
	// keeps the Ps it had. It is off by default, because setting
	// GOMAXPROCS, as any call to runtime.GOMAXPROCS does, stops the
	// runtime from updating it to the process's CPU limit for the whole
	// process: a library must not do that unasked. kernfsim opts in
	// (docs/notes/2026-12-02-uring-holds-its-p.md has the figures). A
	// process run with GODEBUG=asyncpreemptoff=1 is served as if HoldP
	// were unset: without the runtime's preemption signal a garbage
	// collection would wait for an idle queue's next request.
	HoldP bool

	// Rings, if above 0 and below the number of possible CPUs, folds the
	// kernel's per-CPU queues onto that many rings: qid q is served by
	// ring q mod Rings, whose threads may run on any of its qids' CPUs.
	// The kernel still requires every possible CPU's queue to register
	// (fuse_uring_do_register), and each still gets Depth entries; what
	// folding bounds is threads (and, with HoldP, Ps), which otherwise
	// grow with the host's CPU count: 448 on a 448-CPU host. The price is
	// locality: a request may be served on another CPU than its caller's.
	// 0 (the default) is one ring per possible CPU, as libfuse has.
	Rings int

	// DeferTaskRun sets each ring up with IORING_SETUP_SINGLE_ISSUER and
	// IORING_SETUP_DEFER_TASKRUN: the kernel hands a queue thread its
	// requests in the thread's own io_uring_enter. By default it queues
	// them as task work and signals the thread (TWA_SIGNAL). It helps
	// with one client per CPU and costs with more, as woken clients then
	// preempt the queue thread in the middle of its replies
	// (docs/performance.md, "libfuse.sh"). libfuse leaves it off
	// (lib/fuse_uring.c).
	DeferTaskRun bool
}

// holdsP reports whether queue threads of cfg wait holding their P.
func (cfg Config) holdsP() bool {
	return cfg.HoldP && !strings.Contains(os.Getenv("GODEBUG"), "asyncpreemptoff=1")
}

// DefaultDepth is the number of requests a queue can hold at once.
const DefaultDepth = 4

// maxDepth keeps a queue's io_uring (depth entries, the stop poll and
// the wake poll) within the kernel's IORING_MAX_ENTRIES.
const maxDepth = 1<<15 - 2

// ErrPinnedCap is wrapped by the error of a Config whose MaxPinnedBytes
// even the smallest queues exceed.
var ErrPinnedCap = errors.New("MaxPinnedBytes is below what the smallest queues need")

// geometry is the shape of a connection's queues.
type geometry struct {
	queues  int  // one per possible CPU
	depth   int  // ring entries per queue
	payload int  // bytes of payload per entry
	holdP   bool // busy queues wait holding their P (see Config.HoldP)
	deferTW bool // rings defer task work to the queue thread's own waits (Config.DeferTaskRun)
	maxEnts int  // entries a qid may grow to (grow.go)
	rings   int  // rings the queues are folded onto (Config.Rings); queues if not folded
}

// pinned is the memory of the queues' buffers: a header page and a
// payload per entry, mapped and populated for the connection's life.
func (g geometry) pinned() int64 {
	return int64(g.queues) * int64(g.depth) * int64(hdrPage+g.payload)
}

// plan sizes the queues for cpus possible CPUs and a mount asking for
// maxWrite, within cfg.MaxPinnedBytes, and returns the MaxWrite to mount
// with (maxWrite, or less to fit the cap).
func plan(cfg Config, cpus, maxWrite int) (geometry, int, error) {
	g := geometry{queues: cpus, depth: cfg.Depth, payload: payloadSize(maxWrite), holdP: cfg.holdsP(), deferTW: cfg.DeferTaskRun,
		rings: cpus}
	if cfg.Rings < 0 {
		return geometry{}, 0, fmt.Errorf("Rings %d is negative: give 0 for one ring per possible CPU", cfg.Rings)
	}
	if cfg.Rings > 0 {
		g.rings = min(cfg.Rings, cpus)
	}
	if g.depth <= 0 {
		g.depth = DefaultDepth
	}
	if g.depth > maxDepth {
		return geometry{}, 0, fmt.Errorf("Depth %d is above the kernel's limit of %d", cfg.Depth, maxDepth)
	}
	limit := cfg.MaxPinnedBytes
	if limit <= 0 || g.pinned() <= limit {
		return g.withGrowth(limit), maxWrite, nil
	}
	perQueue := limit / int64(g.queues)
	g.depth = int(min(int64(g.depth), max(1, perQueue/int64(hdrPage+g.payload))))
	if g.pinned() <= limit {
		return g.withGrowth(limit), maxWrite, nil
	}
	page := int64(os.Getpagesize())
	g.payload = int((perQueue - hdrPage) / page * page)
	if g.payload < minPayload {
		smallest := geometry{queues: cpus, depth: 1, payload: minPayload, holdP: g.holdP, deferTW: g.deferTW}
		return geometry{}, 0, fmt.Errorf("%w: %d queues (one per possible CPU) of one %d-byte entry need %d bytes, MaxPinnedBytes is %d",
			ErrPinnedCap, cpus, hdrPage+minPayload, smallest.pinned(), limit)
	}
	return g.withGrowth(limit), g.payload, nil
}

// payloadSize is what the kernel requires of each entry's payload:
// max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages), in whole pages.
func payloadSize(maxWrite int) int {
	page := os.Getpagesize()
	pages := (maxWrite-1)/page + 1
	return max(minPayload, pages*page)
}

// defaultMaxWrite is go-fuse's default MountOptions.MaxWrite.
const defaultMaxWrite = 128 << 10

// effectiveMaxWrite is the MaxWrite go-fuse mounts with for m: its
// default if unset, at most the kernel's fs.fuse.max_pages_limit pages.
func effectiveMaxWrite(m int) int {
	if m <= 0 {
		m = defaultMaxWrite
	}
	limit := 256
	if b, err := os.ReadFile("/proc/sys/fs/fuse/max_pages_limit"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			limit = n
		}
	}
	return min(m, limit*os.Getpagesize())
}

// withGrowth sets how many entries a queue may grow to: maxGrow, or
// fewer where limit (Config.MaxPinnedBytes, if set) cannot hold them on
// every queue.
func (g geometry) withGrowth(limit int64) geometry {
	g.maxEnts = max(g.depth, maxGrow)
	if limit > 0 {
		extra := (limit - g.pinned()) / (int64(g.queues) * int64(hdrPage+g.payload))
		g.maxEnts = g.depth + int(min(max(extra, 0), int64(max(maxGrow-g.depth, 0))))
	}
	return g
}
