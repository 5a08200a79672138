package fusefs

import (
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// fakeProc is a /proc for the group cache: threads' credentials, and a
// count of reads.
type fakeProc struct {
	creds map[uint32]procCred
	reads int
}

func (f *fakeProc) read(tid uint32) (procCred, error) {
	f.reads++
	if pc, ok := f.creds[tid]; ok {
		return pc, nil
	}
	return procCred{}, os.ErrNotExist
}

// TestGroupCache checks the cache's rules: a hit within groupTTL reads
// nothing; an expired entry, or one for another fsuid or fsgid (a reused
// thread id), is read again; an unreadable caller (gone, pid 0 from
// another pid namespace, or /proc showing other credentials) gets no
// groups and is not cached; the cache holds at most groupCacheCap.
func TestGroupCache(t *testing.T) {
	now := time.Unix(1000, 0)
	proc := &fakeProc{creds: map[uint32]procCred{
		10: {fsuid: 65534, fsgid: 65534, groups: []uint32{100, 101}},
		11: {fsuid: 1000, fsgid: 1000},
	}}
	g := newGroupCache(proc.read, func() time.Time { return now })
	get := func(tid, uid, gid uint32, want []uint32, wantOK bool, wantReads int) {
		t.Helper()
		got, ok := g.get(tid, uid, gid)
		if ok != wantOK || !slices.Equal(got, want) || proc.reads != wantReads {
			t.Fatalf("get(%d, %d, %d): got %v, %v after %d reads; want %v, %v after %d", tid, uid, gid, got, ok, proc.reads, want, wantOK, wantReads)
		}
	}
	get(10, 65534, 65534, []uint32{100, 101}, true, 1)
	get(10, 65534, 65534, []uint32{100, 101}, true, 1) // cached
	now = now.Add(groupTTL)
	get(10, 65534, 65534, []uint32{100, 101}, true, 2) // expired: read again
	get(10, 1000, 1000, nil, false, 3)                 // another fsuid: read again, and /proc disagrees
	get(11, 1000, 1000, nil, true, 4)                  // no supplementary groups
	get(12, 1000, 1000, nil, false, 5)                 // gone
	get(12, 1000, 1000, nil, false, 6)                 // not cached
	get(0, 1000, 1000, nil, false, 6)                  // another pid namespace: not even read

	for tid := uint32(1000); tid < 1000+2*groupCacheCap; tid++ {
		proc.creds[tid] = procCred{fsuid: 1, fsgid: 1}
		g.get(tid, 1, 1)
		if n := g.len(); n > groupCacheCap {
			t.Fatalf("after %d callers: %d entries, want at most %d", tid-999, n, groupCacheCap)
		}
	}
	now = now.Add(groupTTL)
	proc.creds[5] = procCred{fsuid: 1, fsgid: 1}
	g.get(5, 1, 1) // a new caller
	if n := g.len(); n != 1 {
		t.Fatalf("a full cache whose entries have all expired, after one more caller: %d entries, want 1", n)
	}
}

// TestParseProcCred parses this process's /proc/self/status and a
// sample, and refuses one without the credential lines.
func TestParseProcCred(t *testing.T) {
	b := testkit.Must(os.ReadFile("/proc/self/status"))(t)
	pc := testkit.Must(parseProcCred(b))(t)
	groups := testkit.Must(os.Getgroups())(t)
	var want []uint32
	for _, g := range groups {
		want = append(want, uint32(g))
	}
	slices.Sort(want)
	slices.Sort(pc.groups)
	if pc.fsuid != uint32(os.Geteuid()) || pc.fsgid != uint32(os.Getegid()) || !slices.Equal(pc.groups, want) {
		t.Errorf("/proc/self/status: got %+v, want fsuid %d fsgid %d groups %v", pc, os.Geteuid(), os.Getegid(), want)
	}
	sample := "Name:\tcat\nUmask:\t0022\nPid:\t42\nUid:\t65534\t65534\t65534\t65533\nGid:\t65534\t65534\t65534\t65532\nFDSize:\t64\nGroups:\t100 4 \nNStgid:\t42\n"
	pc = testkit.Must(parseProcCred([]byte(sample)))(t)
	if pc.fsuid != 65533 || pc.fsgid != 65532 || !slices.Equal(pc.groups, []uint32{100, 4}) {
		t.Errorf("sample: got %+v, want fsuid 65533 fsgid 65532 groups [100 4]", pc)
	}
	if _, err := parseProcCred([]byte("Name:\tcat\nUid:\t1\t1\t1\t1\n")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("status without Gid and Groups: got %v, want EINVAL", err)
	}
}
