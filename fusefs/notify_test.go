package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// TestNotifyNoDeadlock is issue 23: with a kernel cache on, a writer
// of new_device and delete_device and a client listing devices/kernfsim,
// both on the CPU whose io_uring queue serves them. The kernel handles an
// entry notification under the directory's i_rwsem, which the listing
// client holds while its READDIR or LOOKUP waits on that queue; a
// notification sent from the queue's thread never returned. The writers
// must finish within a bound; if they do not, the connection is aborted
// so that no thread of the test stays blocked in the kernel.
//
// The devices' names are looked up before each phase, so the kernel
// caches them (missing, then present) for an hour: once the notifier has
// flushed, none of that may be served.
func TestNotifyNoDeadlock(t *testing.T) {
	forEachTransport(t, testNotifyNoDeadlock)
}

// notifyDevices is how many devices the deadlock test makes and
// removes; on the old code the writers hung at the second write.
const notifyDevices = 500

func testNotifyNoDeadlock(t *testing.T, tp uring.Kind) {
	tr, _ := newServedTree(t, "rcu")
	cached := Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour, NegativeTimeout: new(time.Hour)}
	m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, Options: cached})
	cpu := firstCPU(t)
	dir := filepath.Join(m.Mountpoint, "devices/kernfsim")
	names := make([]string, notifyDevices)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
	}
	stop := make(chan struct{})
	readerDone := onCPU(cpu, func() error {
		k := 0
		repeatUntil(stop, func() { k++; listAndMiss(dir, fmt.Sprintf("missing%d", k)) })
		return nil
	})
	defer func() {
		close(stop)
		awaitBounded(t, "the reader", readerDone)
	}()
	start := time.Now()
	for _, phase := range []struct {
		file          string
		before, after error // what a lookup of each name gives (nil: found)
	}{{"new_device", syscall.ENOENT, nil}, {"delete_device", nil, syscall.ENOENT}} {
		requireStat(t, dir, names, phase.before)
		writeAllBounded(t, m, cpu, phase.file, names)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := m.Server.NotifyBarrier(ctx)
		cancel()
		require.NoError(t, err, "over %s: notifier barrier after %s", tp, phase.file)
		requireStat(t, dir, names, phase.after)
	}
	t.Logf("over %s: %d writes in %v on CPU %d; notifier %+v", tp, 2*notifyDevices, time.Since(start).Round(time.Millisecond), cpu, m.Server.NotifyStats())
}

// writeAllBounded writes each name to bus/kernfsim/<file> from a thread
// pinned to cpu and requires the writes to finish within a minute; if
// they do not, it aborts m's connection to free the blocked threads and
// fails the test.
func writeAllBounded(t *testing.T, m *Mount, cpu int, file string, names []string) {
	t.Helper()
	var writes atomic.Int64
	done := onCPU(cpu, func() error {
		for _, name := range names {
			if err := ctlWrite(m.Mountpoint, file, name); err != nil {
				return err
			}
			writes.Add(1)
		}
		return nil
	})
	const bound = 60 * time.Second
	select {
	case err := <-done:
		require.NoError(t, err, "over %s", m.Transport())
	case <-time.After(bound):
		abortConnection(t, m)
		awaitBounded(t, "the writer, after the abort", done)
		t.Fatalf("over %s: %d writes to %s beside a listing client on CPU %d did not finish within %v: %d returned (deadlocked; the connection was aborted)",
			m.Transport(), len(names), file, cpu, bound, writes.Load())
	}
}

// requireStat looks each name up in dir through the mount and requires
// want (nil: it exists).
func requireStat(t *testing.T, dir string, names []string, want error) {
	t.Helper()
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(dir, name), &st); !errors.Is(err, want) {
			t.Fatalf("stat %s/%s: got %v, want %v", dir, name, err, want)
		}
	}
}

// listAndMiss lists dir and looks up missing, a name not in it, with
// plain syscalls: each holds dir's i_rwsem shared in the kernel while its
// READDIR or LOOKUP is served. Errors (an aborted connection) are
// ignored.
func listAndMiss(dir, missing string) {
	if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		buf := make([]byte, 8192)
		for {
			n, err := unix.Getdents(fd, buf)
			if n <= 0 || err != nil {
				break
			}
		}
		unix.Close(fd)
	}
	var st unix.Stat_t
	unix.Stat(filepath.Join(dir, missing), &st)
}

// ctlWrite writes data to bus/kernfsim/<file> with plain syscalls (no Go
// file, so no netpoller registration).
func ctlWrite(mnt, file, data string) error {
	path := filepath.Join(mnt, "bus/kernfsim", file)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(data)); err != nil {
		return fmt.Errorf("write %q to %s: %w", data, path, err)
	}
	return nil
}

// firstCPU is the lowest CPU this process may run on.
func firstCPU(t *testing.T) int {
	t.Helper()
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	for c := range 1024 {
		if set.IsSet(c) {
			return c
		}
	}
	t.Fatal("no CPU in this process's affinity mask")
	return 0
}

// onCPU runs f on a goroutine locked to an OS thread pinned to cpu and
// returns a channel that receives f's error. The thread is never
// unlocked, so it ends with the goroutine and its pinning with it.
func onCPU(cpu int, f func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- fmt.Errorf("pin to CPU %d: %w", cpu, err)
			return
		}
		done <- f()
	}()
	return done
}

// abortConnection aborts m's FUSE connection, so that every client
// blocked in the kernel on it returns: through fusectl's abort file, or
// umount -f where fusectl is not mounted.
func abortConnection(t *testing.T, m *Mount) {
	t.Helper()
	err := m.abortFusectl(errors.New("not tried"))
	if err != nil {
		err = m.endBusy()
	}
	assert.NoError(t, err, "abort the connection")
}

// awaitBounded waits up to 10 s for done, failing the test (not hanging
// it) if nothing comes.
func awaitBounded(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil && !kernfsim.Disconnected(err) && !errors.Is(err, syscall.ENODEV) {
			t.Logf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not return within 10 s", what)
	}
}

// fakeKernel records the notifications it is sent. A notification of the
// name "held" blocks until release is closed, as the kernel holds one
// behind a lookup in progress.
type fakeKernel struct {
	mu      sync.Mutex
	got     []string
	entered chan struct{} // receives when a "held" notification arrives
	release chan struct{}
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (k *fakeKernel) record(s, name string) fuse.Status {
	k.mu.Lock()
	k.got = append(k.got, s)
	k.mu.Unlock()
	if name == "held" {
		k.entered <- struct{}{}
		<-k.release
	}
	return fuse.OK
}

func (k *fakeKernel) EntryNotify(parent uint64, name string) fuse.Status {
	return k.record(fmt.Sprintf("entry %d/%s", parent, name), name)
}

func (k *fakeKernel) DeleteNotify(parent, child uint64, name string) fuse.Status {
	return k.record(fmt.Sprintf("delete %d/%s=%d", parent, name, child), name)
}

func (k *fakeKernel) InodeNotify(node uint64, _, _ int64) fuse.Status {
	return k.record(fmt.Sprintf("inode %d", node), "")
}

func (k *fakeKernel) sent() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.got)
}

// heldNotifier returns a notifier on a fake kernel that holds its first
// notification (entry 1/held) until the test releases it.
func heldNotifier(t *testing.T, capacity int, staleFor time.Duration) (*notifier, *fakeKernel) {
	t.Helper()
	k := newFakeKernel()
	q := newNotifier(func() kernel { return k }, capacity, staleFor)
	t.Cleanup(q.close)
	mustQueue(t, q, notice{kind: noticeEntry, ino: 1, name: "held"})
	select {
	case <-k.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifier did not send its first notice")
	}
	return q, k
}

func mustQueue(t *testing.T, q *notifier, n notice) uint64 {
	t.Helper()
	seq, ok := q.enqueue(n)
	if !ok {
		t.Fatalf("enqueue %+v: refused", n)
	}
	return seq
}

func barrier(t *testing.T, q *notifier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, q.barrier(ctx), "barrier")
}

// TestNotifierOrder checks coalescing and order: one notice per inode
// and per name while queued; an add's entry notice is absorbed by a
// queued delete notice of the name (so it never goes before that remove),
// a remove upgrades a queued entry notice, removes of two nodes of a name
// are both sent in order, and a change of a name whose notice is being
// sent queues a new one.
func TestNotifierOrder(t *testing.T) {
	q, k := heldNotifier(t, notifyCap, time.Second)
	steps := []struct {
		n        notice
		absorbed bool
	}{
		{notice{kind: noticeEntry, ino: 1, name: "x"}, false},             // add x
		{notice{kind: noticeInode, ino: 1}, false},                        // the parent's attributes
		{notice{kind: noticeEntry, ino: 1, name: "x"}, true},              // add x again: one notice
		{notice{kind: noticeDelete, ino: 1, child: 10, name: "x"}, true},  // remove x (node 10): upgraded
		{notice{kind: noticeEntry, ino: 1, name: "x"}, true},              // add x: the delete notice covers it
		{notice{kind: noticeDelete, ino: 1, child: 11, name: "x"}, false}, // remove x (node 11): its own notice
		{notice{kind: noticeEntry, ino: 1, name: "x"}, true},              // add x: behind that remove
		{notice{kind: noticeInode, ino: 1}, true},                         // one inode notice
		{notice{kind: noticeEntry, ino: 2, name: "y"}, false},             // another directory
		{notice{kind: noticeEntry, ino: 1, name: "held"}, false},          // the name being sent: queued anew
		{notice{kind: noticeDelete, ino: 3, child: 12, name: "z"}, false}, // a plain remove
	}
	last := uint64(0)
	for i, s := range steps {
		seq := mustQueue(t, q, s.n)
		if fresh := seq > last; fresh == s.absorbed {
			t.Fatalf("step %d (%+v): seq %d after %d, want absorbed=%v", i, s.n, seq, last, s.absorbed)
		}
		last = max(last, seq)
	}
	close(k.release)
	barrier(t, q)
	want := []string{"entry 1/held", "delete 1/x=10", "inode 1", "delete 1/x=11", "entry 2/y", "entry 1/held", "delete 3/z=12"}
	if got := k.sent(); !slices.Equal(got, want) {
		t.Fatalf("sent\n%q\nwant\n%q", got, want)
	}
	st := q.stats()
	if st.Queued != 7 || st.Coalesced != 5 || st.Sent != 7 || st.Pending != 0 || st.Overflows != 0 {
		t.Fatalf("stats %+v, want 7 queued, 5 coalesced, 7 sent", st)
	}
}

// TestNotifierOverflow fills a queue whose notifier the kernel holds: the
// notice past the capacity is dropped without blocking and counted, one
// that a queued notice absorbs is still taken, and the barrier waits out
// the kernel's timeouts after the drop.
func TestNotifierOverflow(t *testing.T) {
	const staleFor = 200 * time.Millisecond
	q, k := heldNotifier(t, 3, staleFor)
	for _, name := range []string{"a", "b", "c"} {
		mustQueue(t, q, notice{kind: noticeEntry, ino: 1, name: name})
	}
	start := time.Now()
	if _, ok := q.enqueue(notice{kind: noticeEntry, ino: 1, name: "d"}); ok {
		t.Fatal("a fourth notice in a queue of 3: taken, want dropped")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a full queue blocked enqueue for %v", d)
	}
	mustQueue(t, q, notice{kind: noticeEntry, ino: 1, name: "b"}) // absorbed: no room needed
	close(k.release)
	barrier(t, q)
	if d := time.Since(start); d < staleFor {
		t.Fatalf("barrier after an overflow returned after %v, want at least the timeouts' %v", d, staleFor)
	}
	want := []string{"entry 1/held", "entry 1/a", "entry 1/b", "entry 1/c"}
	if got := k.sent(); !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
	if st := q.stats(); st.Overflows != 1 || st.Coalesced != 1 {
		t.Fatalf("stats %+v, want 1 overflow and 1 coalesced", st)
	}
	mustQueue(t, q, notice{kind: noticeEntry, ino: 1, name: "e"}) // room again
}

// TestNotifierWaitIsBounded checks that a writer waiting for a notice
// gives up once the kernel has held the notifier for the bound, and
// waits a notifier that makes progress out.
func TestNotifierWaitIsBounded(t *testing.T) {
	q, k := heldNotifier(t, notifyCap, time.Second)
	seq := mustQueue(t, q, notice{kind: noticeEntry, ino: 1, name: "x"})
	b := waitBounds{held: 20 * time.Millisecond, total: 10 * time.Second}
	start := time.Now()
	if q.wait(seq, b) {
		t.Fatal("wait behind a held notifier: the notice was sent, want given up")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("wait behind a held notifier took %v, want about %v", d, b.held)
	}
	if st := q.stats(); st.Unwaited != 1 {
		t.Fatalf("unwaited %d, want 1", st.Unwaited)
	}
	close(k.release)
	barrier(t, q) // a waiter that comes while the held call is still being let go gives up too
	seq = mustQueue(t, q, notice{kind: noticeEntry, ino: 1, name: "y"})
	if !q.wait(seq, b) {
		t.Fatal("wait with the notifier free: given up, want the notice sent")
	}
}

// TestNotifierCloseWhileHeld closes a queue whose notifier the kernel
// holds: close returns within its bound, drops what is queued, refuses
// new notices and releases waiters; the goroutine ends once the kernel
// lets it go.
func TestNotifierCloseWhileHeld(t *testing.T) {
	q, k := heldNotifier(t, notifyCap, time.Second)
	seq := mustQueue(t, q, notice{kind: noticeEntry, ino: 1, name: "x"})
	waited := make(chan bool, 1)
	go func() { waited <- q.wait(seq, waitBounds{held: time.Hour, total: time.Hour}) }()
	start := time.Now()
	q.close()
	if d := time.Since(start); d > closeWait+time.Second {
		t.Fatalf("close took %v", d)
	}
	select {
	case ok := <-waited:
		if ok {
			t.Fatal("a waiter released by close: sent, want not")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close left a waiter waiting")
	}
	if _, ok := q.enqueue(notice{kind: noticeEntry, ino: 1, name: "y"}); ok {
		t.Fatal("enqueue after close: taken")
	}
	if st := q.stats(); st.Dropped != 1 {
		t.Fatalf("dropped %d, want 1", st.Dropped)
	}
	close(k.release)
	select {
	case <-q.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifier did not end once the kernel let it go")
	}
	if got := k.sent(); !slices.Equal(got, []string{"entry 1/held"}) {
		t.Fatalf("sent %q after close, want only the held notice", got)
	}
}

// TestNotifierStopsWithMount checks that a mount with a kernel cache
// starts its notifier on the first change and that unmounting ends it.
func TestNotifierStopsWithMount(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		tr, _ := newServedTree(t, "rcu")
		m, err := MountTree(tr, t.TempDir(), MountOptions{Transport: uring.Config{Only: tp}, Options: Options{EntryTimeout: time.Hour}})
		require.NoError(t, err)
		ctl(t, m.Mountpoint, "new_device", "d0")
		ctl(t, m.Mountpoint, "delete_device", "d0")
		if st := m.Server.NotifyStats(); st.Sent == 0 {
			t.Fatalf("after new_device and delete_device: %+v, want notices sent", st)
		}
		require.NoError(t, m.Unmount())
		select {
		case <-m.Server.notes.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the notifier goroutine outlived the unmount")
		}
	})
}

// TestDeleteNotifyInvalidatesAnyNode checks what the queue's coalescing
// relies on: a delete notification invalidates the name's cached dentry
// even when it points to another node than the one named removed.
func TestDeleteNotifyInvalidatesAnyNode(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		tr, _ := newServedTree(t, "rcu")
		m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, Options: Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour}})
		ctl(t, m.Mountpoint, "new_device", "d0")
		dev := filepath.Join(m.Mountpoint, "devices/kernfsim/d0")
		testkit.Must(os.Stat(dev))(t)
		lookups := func() uint64 { return m.Server.Stats().Requests()[opLookup] }
		before := lookups()
		testkit.Must(os.Stat(dev))(t)
		if n := lookups(); n != before {
			t.Fatalf("a cached entry sent %d LOOKUPs", n-before)
		}
		dir := testkit.Must(tr.Lookup(testkit.Must(tr.Lookup(tr.Root(), "devices"))(t), "kernfsim"))(t)
		node := testkit.Must(tr.Lookup(dir, "d0"))(t)
		m.srv.DeleteNotify(dir.Ino(), node.Ino()+1_000_000, "d0") // a node the dentry does not point to
		testkit.Must(os.Stat(dev))(t)
		if lookups() == before {
			t.Fatal("after a delete notification naming another node, the cached entry was still used")
		}
	})
}

// TestWritersLeaveEntries is the probe's fault 33.4: more writers than a
// queue has entries, all on one CPU beside a client listing the devices:
// eight chmods of attribute files (each SETATTR waits for its kernel
// notices, keeping its ring entry over io_uring) and a maker of devices.
// The listing, holding the directory's i_rwsem, waited for an entry, the
// notices waited for that i_rwsem, and the writes returned on their
// timeout with the kernel not yet told: a device stat'ed ENOENT right
// after its new_device returned. Every device must be seen at once.
func TestWritersLeaveEntries(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		tr, _ := newServedTree(t, "rcu")
		cached := Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour, NegativeTimeout: new(time.Hour)}
		m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, Options: cached})
		cpu := firstCPU(t)
		dir := filepath.Join(m.Mountpoint, "devices/kernfsim")
		attrs := attributeFiles(t, m.Mountpoint, 8)
		stop := make(chan struct{})
		var helpers []<-chan error
		helpers = append(helpers, onCPU(cpu, func() error {
			k := 0
			repeatUntil(stop, func() { k++; listAndMiss(dir, fmt.Sprintf("missing%d", k)) })
			return nil
		}))
		for _, f := range attrs {
			helpers = append(helpers, onCPU(cpu, func() error {
				k := 0
				repeatUntil(stop, func() { k++; unix.Chmod(f, uint32(0o444|0o200*(k%2))) })
				return nil
			}))
		}
		defer func() {
			close(stop)
			for _, done := range helpers {
				awaitBounded(t, "a reader or chmod", done)
			}
		}()
		const devices = 100
		done := onCPU(cpu, func() error {
			for i := range devices {
				name := fmt.Sprintf("w%d", i)
				var st unix.Stat_t
				if err := unix.Stat(filepath.Join(dir, name), &st); !errors.Is(err, syscall.ENOENT) {
					return fmt.Errorf("stat %s before new_device: %v, want ENOENT", name, err)
				}
				if err := ctlWrite(m.Mountpoint, "new_device", name); err != nil {
					return err
				}
				if err := unix.Stat(filepath.Join(dir, name), &st); err != nil {
					return fmt.Errorf("stat %s right after new_device returned: %w (a stale cache)", name, err)
				}
			}
			return nil
		})
		select {
		case err := <-done:
			require.NoError(t, err, "over %s", tp)
		case <-time.After(time.Minute):
			abortConnection(t, m)
			t.Fatalf("over %s: %d devices beside chmods and a listing client on CPU %d were not made within a minute (the connection was aborted)", tp, devices, cpu)
		}
		t.Logf("over %s: notifier %+v", tp, m.Server.NotifyStats())
	})
}

// attributeFiles returns n regular files of the tree under mnt.
func attributeFiles(t *testing.T, mnt string, n int) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(mnt, "devices/system/cpu"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && len(files) < n {
			files = append(files, path)
		}
		if len(files) == n {
			return filepath.SkipAll
		}
		return err
	})
	require.NoError(t, err)
	require.Len(t, files, n, "regular files under devices/system/cpu")
	return files
}
