package fusefs

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// Supplementary groups under --permissions server.
//
// A FUSE request carries the caller's fsuid, fsgid and thread id, not its
// supplementary groups, so a check that only a supplementary group could
// pass would be refused although the kernel (default_permissions) and the
// real sysfs allow it. The server reads the groups from /proc/TID/status
// (the header's pid is the calling thread's id), and only when the answer
// depends on them, which is when the kernel's acl_permission_check asks
// in_group_p past the fsgid: the caller is not the owner, its gid is not
// the node's group, and the group and other triplets differ on the bits
// asked for (kernfsim.WithGroups). Every other check costs nothing more.
// Group membership can refuse as well as grant: a member of a 0604 file's
// group may not read it.
//
// When the groups cannot be read the check is refused (fails closed):
// the caller is gone, it runs in a pid namespace this server cannot see
// (the kernel then sends pid 0), or /proc/TID/status shows another fsuid
// or fsgid than the request (the thread id was reused, or /proc belongs
// to another pid namespace).
//
// Lock: groupCache.mu is a leaf; nothing is called and no other lock is
// taken under it, and /proc is read without it.

// groupTTL is how long a caller's groups are trusted. Thread ids are
// reused and a privileged thread may change its groups (setgroups), so an
// entry must not live long. 100 ms keeps a client that keeps hitting a
// group-granted node at ten /proc reads a second per thread at most, a
// small share of the round trips it makes.
const groupTTL = 100 * time.Millisecond

// groupCacheCap bounds the cache: the threads that needed their groups in
// the last groupTTL. More only costs /proc reads.
const groupCacheCap = 256

// groupCache maps a calling thread's id to its supplementary groups, for
// groupTTL, keyed also by the fsuid and fsgid they were read for.
type groupCache struct {
	read  func(tid uint32) (procCred, error) // immutable: reads /proc (tests replace it)
	now   func() time.Time                   // immutable
	reads atomic.Uint64                      // accessed atomically: calls of read, for tests

	mu      sync.Mutex
	entries map[uint32]groupEntry // protected by mu
}

// groupEntry is one caller's groups; groups is never modified once stored.
type groupEntry struct {
	uid, gid uint32
	groups   []uint32
	expires  time.Time
}

// procCred is what /proc/TID/status says of a thread's credentials.
type procCred struct {
	fsuid, fsgid uint32
	groups       []uint32
}

// callerGroups is the cache the servers of this process share: a thread's
// groups do not depend on the mount it asks, and every mount of this
// process sees callers' thread ids in the same pid namespace.
var callerGroups = newGroupCache(readProcCred, time.Now)

func newGroupCache(read func(uint32) (procCred, error), now func() time.Time) *groupCache {
	return &groupCache{read: read, now: now, entries: make(map[uint32]groupEntry)}
}

// get returns the supplementary groups of the thread tid whose fsuid and
// fsgid are uid and gid, and whether they are known.
func (g *groupCache) get(tid, uid, gid uint32) ([]uint32, bool) {
	if tid == 0 {
		return nil, false
	}
	now := g.now()
	g.mu.Lock()
	e, ok := g.entries[tid]
	g.mu.Unlock()
	if ok && e.uid == uid && e.gid == gid && now.Before(e.expires) {
		return e.groups, true
	}
	g.reads.Add(1)
	pc, err := g.read(tid)
	if err != nil || pc.fsuid != uid || pc.fsgid != gid {
		return nil, false
	}
	g.put(tid, groupEntry{uid: uid, gid: gid, groups: pc.groups, expires: now.Add(groupTTL)}, now)
	return pc.groups, true
}

// put stores e for tid, making room first: the entries expired at now go,
// and if none has expired an arbitrary one (Go's map order is random).
func (g *groupCache) put(tid uint32, e groupEntry, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.entries[tid]; !ok && len(g.entries) >= groupCacheCap {
		g.evictLocked(now)
	}
	g.entries[tid] = e
}

// evictLocked drops the entries expired at now, or one entry if none is.
//
// Preconditions: g.mu is held.
func (g *groupCache) evictLocked(now time.Time) {
	n := len(g.entries)
	for tid, e := range g.entries {
		if !now.Before(e.expires) {
			delete(g.entries, tid)
		}
	}
	if len(g.entries) < n {
		return
	}
	for tid := range g.entries {
		delete(g.entries, tid)
		return
	}
}

// len is the number of cached callers.
func (g *groupCache) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.entries)
}

// readProcCred reads the fsuid, fsgid and supplementary groups of thread
// tid from /proc/TID/status (a thread's id works there as a process id).
func readProcCred(tid uint32) (procCred, error) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return procCred{}, err
	}
	return parseProcCred(b)
}

// parseProcCred parses the Uid, Gid and Groups lines of a
// /proc/PID/status ("Uid:\treal\teffective\tsaved\tfs").
func parseProcCred(b []byte) (procCred, error) {
	var pc procCred
	var seen int
	for line := range bytes.Lines(b) {
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		ids, err := parseIDs(val)
		switch {
		case err != nil:
			continue
		case string(key) == "Uid" && len(ids) == 4:
			pc.fsuid, seen = ids[3], seen|1
		case string(key) == "Gid" && len(ids) == 4:
			pc.fsgid, seen = ids[3], seen|2
		case string(key) == "Groups":
			pc.groups, seen = ids, seen|4
		}
		if seen == 7 {
			return pc, nil
		}
	}
	return procCred{}, syscall.EINVAL
}

// parseIDs parses whitespace-separated decimal ids.
func parseIDs(b []byte) ([]uint32, error) {
	var ids []uint32
	for _, f := range bytes.Fields(b) {
		id, err := strconv.ParseUint(string(f), 10, 32)
		if err != nil {
			return nil, err
		}
		ids = append(ids, uint32(id))
	}
	return ids, nil
}

// withGroups runs check for the caller of h (kernfsim.WithGroups): with
// its uid and gid alone, then, only where the answer depends on its
// supplementary groups, with the groups read from /proc. Groups that
// cannot be read refuse (EACCES).
func withGroups(h *fuse.InHeader, check func(kernfsim.Cred) error) error {
	groups := func() ([]uint32, bool) { return callerGroups.get(h.Pid, h.Uid, h.Gid) }
	return kernfsim.WithGroups(cred(h), groups, check)
}

// permission is Tree.Permission for the caller of h, with its
// supplementary groups where they decide. Every LOOKUP asks it, so the
// usual answer, a grant by uid and gid alone, is had with one call; only
// a refusal goes through withGroups, which asks again and reads the
// groups if they decide.
func (s *Server) permission(h *fuse.InHeader, n *kernfsim.Node, mask kernfsim.Access) error {
	if s.tree.Permission(n, mask, cred(h)) == nil {
		return nil
	}
	return withGroups(h, func(c kernfsim.Cred) error { return s.tree.Permission(n, mask, c) })
}
