package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// smallSynth is a small synthetic machine: fast to build and to walk.
var smallSynth = sysfs.SynthConfig{CPUs: 4, Sockets: 1, ThreadsPerCore: 2, MemBlocks: 4, Netdevs: 2, Disks: 1}.WithDefaults()

// newServedTree builds the small synthetic tree with the in-tree ABI under
// lock; the tree is sealed (under none, writers are then refused).
func newServedTree(t testing.TB, lock string) (*kernfsim.Tree, *StatsFile) {
	t.Helper()
	tr := testtree.New(t, lock)
	require.NoError(t, sysfs.BuildSynthetic(tr, smallSynth))
	sf := NewStatsFile(tr)
	testkit.Must(sysfs.AddABI(tr, sf))(t)
	tr.Seal()
	return tr, sf
}

func TestMountConformance(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) { testMountConformance(t, tp) })
}

func testMountConformance(t *testing.T, tp uring.Kind) {
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr, sf := newServedTree(t, lock)
		m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, Stats: sf})
		tr.Freeze(true)
		defer tr.Freeze(false)
		for sub, want := range map[string]string{
			"devices/system/cpu":  "cpu0/topology/core_id",
			"devices/virtual/net": "lo/mtu",
			"class":               "net/lo",
		} {
			assert.NoError(t, fstest.TestFS(noSeekFS{os.DirFS(filepath.Join(m.Mountpoint, sub))}, want), "%s", sub)
		}
		compareWithTree(t, tr, m.Mountpoint)
	})
}

// noSeekFS hides io.Seeker and io.ReaderAt from the files of a mount.
// sysfs (and kernfsim, like it) reports st_size 4096 for every attribute
// whatever its contents, so fstest's seek-to-end checks, which trust
// st_size, would fail on the real /sys too.
type noSeekFS struct{ fs.FS }

type plainFile struct{ fs.File }

func (n noSeekFS) Open(name string) (fs.File, error) {
	f, err := n.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return f, nil
	}
	return plainFile{f}, nil
}

func (n noSeekFS) ReadLink(name string) (string, error)   { return fs.ReadLink(n.FS, name) }
func (n noSeekFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(n.FS, name) }

// compareWithTree walks the tree's io/fs view and checks that the mount
// shows the same names, types, modes, link targets and contents.
func compareWithTree(t *testing.T, tr *kernfsim.Tree, mnt string) {
	tfs := tr.FS(kernfsim.RootCred)
	n := 0
	err := fs.WalkDir(tfs, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		want, _ := fs.Lstat(tfs, path)
		got, err := os.Lstat(filepath.Join(mnt, path))
		if err != nil {
			return err
		}
		if got.Mode() != want.Mode() || (!got.IsDir() && got.Size() != want.Size()) {
			t.Errorf("%s: mount has %v size %d, tree has %v size %d", path, got.Mode(), got.Size(), want.Mode(), want.Size())
		}
		return compareContents(t, tfs, mnt, path, want)
	})
	require.NoError(t, err)
	if n < 100 {
		t.Fatalf("walked %d paths: the tree is too small to mean anything", n)
	}
}

func compareContents(t *testing.T, tfs fs.FS, mnt, path string, info fs.FileInfo) error {
	full := filepath.Join(mnt, path)
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		want, _ := fs.ReadLink(tfs, path)
		if got, err := os.Readlink(full); err != nil || got != want {
			t.Errorf("readlink %s: got %q, %v; want %q", path, got, err, want)
		}
	case path == "kernel/kernfsim/stats":
		// live counters: they change with every request, this walk's included
	case info.Mode().IsRegular() && info.Mode()&0o444 != 0:
		want, werr := fs.ReadFile(tfs, path)
		got, gerr := os.ReadFile(full)
		if !bytes.Equal(got, want) || (werr == nil) != (gerr == nil) {
			t.Errorf("read %s: mount gave %q, %v; tree gave %q, %v", path, got, gerr, want, werr)
		}
	}
	return nil
}

func TestCachesStayTruthful(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) { testCachesStayTruthful(t, tp) })
}

func testCachesStayTruthful(t *testing.T, tp uring.Kind) {
	testkit.ForEachLock(t, testtree.Writers, func(t *testing.T, lock string) {
		tr, _ := newServedTree(t, lock)
		long := 30 * time.Second
		m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, Options: Options{EntryTimeout: long, AttrTimeout: long, NegativeTimeout: new(long)}})
		mnt := m.Mountpoint
		dev := filepath.Join(mnt, "devices/kernfsim/d0")
		if _, err := os.Stat(dev); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("before creation: got %v, want ENOENT (now cached negative)", err)
		}
		ctl(t, mnt, "new_device", "d0")
		if _, err := os.Stat(filepath.Join(dev, "value")); err != nil {
			t.Fatalf("created device after a cached negative lookup: %v", err)
		}
		value := testkit.Must(tr.FS(kernfsim.RootCred).(fs.StatFS).Stat("devices/kernfsim/d0/value"))(t)
		node := testkit.Must(kernfsim.NewWalker(tr, kernfsim.WalkerOptions{}).Resolve(kernfsim.RootCred, "devices/kernfsim/d0/value"))(t)
		require.NoError(t, tr.Setattr(node, kernfsim.SetattrArgs{Valid: kernfsim.SetMode, Mode: 0o600}, kernfsim.RootCred))
		if fi, err := os.Stat(filepath.Join(dev, "value")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("after chmod in the tree (was %v): got %v, %v; want mode 0600", value.Mode(), fi.Mode(), err)
		}
		ctl(t, mnt, "delete_device", "d0")
		if _, err := os.Stat(dev); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after delete_device with 30 s entry timeout: got %v, want ENOENT", err)
		}
	})
}

// ctl writes data to bus/kernfsim/<file> through the mount.
func ctl(t *testing.T, mnt, file, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "bus/kernfsim", file), []byte(data), 0), "write %q to %s", data, file)
}

// blockingShow blocks each Show until released.
type blockingShow struct{ entered, release chan struct{} }

func (b *blockingShow) Show(_ context.Context, buf *bytes.Buffer) error {
	b.entered <- struct{}{}
	<-b.release
	buf.WriteString("done\n")
	return nil
}

func TestRemovalAndOpenFiles(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) { testRemovalAndOpenFiles(t, tp) })
}

func testRemovalAndOpenFiles(t *testing.T, tp uring.Kind) {
	testkit.ForEachLock(t, testtree.Writers, func(t *testing.T, lock string) {
		tr, _ := newServedTree(t, lock)
		m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
		ctl(t, m.Mountpoint, "new_device", "d1")
		f := testkit.Must(os.Open(filepath.Join(m.Mountpoint, "devices/kernfsim/d1/value")))(t)
		defer f.Close()
		ctl(t, m.Mountpoint, "delete_device", "d1")
		if _, err := f.Read(make([]byte, 8)); !errors.Is(err, syscall.ENODEV) {
			t.Fatalf("read of a removed device's open file: got %v, want ENODEV", err)
		}

		src := &blockingShow{entered: make(chan struct{}), release: make(chan struct{})}
		slow := testkit.Must(tr.AddAttr(tr.Root(), "slow", 0o444, src))(t)
		sf := testkit.Must(os.Open(filepath.Join(m.Mountpoint, "slow")))(t)
		defer sf.Close()
		readDone := make(chan error, 1)
		go func() {
			buf := make([]byte, 64)
			k, err := sf.Read(buf) // one read: a second one would get ENODEV, as on sysfs
			if err == nil && string(buf[:k]) != "done\n" {
				err = fmt.Errorf("read %q, want the whole value", buf[:k])
			}
			readDone <- err
		}()
		<-src.entered
		released := false
		defer func() {
			if !released { // a failure must not leave the read, and so the unmount, hanging
				close(src.release)
			}
		}()
		before := tr.Teardowns().Completed
		removed := make(chan error, 1)
		go func() { removed <- tr.Remove(context.Background(), slow) }()
		waitDraining(t, tr, 1) // Remove has deactivated the node and waits for the read
		if st := tr.Teardowns(); st.Completed != before {
			t.Fatalf("teardown completed (%+v, %d before) while a FUSE read was in flight", st, before)
		}
		close(src.release)
		released = true
		require.NoError(t, <-readDone, "in-flight read")
		require.NoError(t, <-removed)
	})
}

func TestForgetReturnsTableToBaseline(t *testing.T) {
	forEachTransport(t, testForgetReturnsTableToBaseline)
}

func testForgetReturnsTableToBaseline(t *testing.T, tp uring.Kind) {
	tr, _ := newServedTree(t, "rcu")
	m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
	const baseline = 1 // the root, pinned; whatever the mount itself looked up is forgotten too
	n := 0
	filepath.WalkDir(m.Mountpoint, func(path string, _ fs.DirEntry, _ error) error {
		if _, err := os.Lstat(path); err == nil {
			n++
		}
		return nil
	})
	if grown := m.Server.Nodeids(); grown <= baseline+int64(n)/2 {
		t.Fatalf("after walking %d paths the nodeid table has %d entries (baseline %d): lookups not counted", n, grown, baseline)
	}
	// FORGETs arrive asynchronously: drop caches until the table is back,
	// with a deadline as the failure detector.
	// Polled on this goroutine, which dropCaches may fail.
	testkit.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		dropCaches(t)
		if got := m.Server.Nodeids(); got != baseline {
			return fmt.Errorf("after drop_caches: nodeid table %d, want baseline %d", got, baseline)
		}
		return nil
	})
}

// dropCaches asks the kernel to forget every unused dentry and inode, which
// sends FORGETs for our nodes.
func dropCaches(t *testing.T) {
	t.Helper()
	require.NoError(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0), "drop_caches")
}

func TestDeferredTeardownOverFUSE(t *testing.T) {
	forEachTransport(t, testDeferredTeardownOverFUSE)
}

func testDeferredTeardownOverFUSE(t *testing.T, tp uring.Kind) {
	s, err := locking.New("rcu", locking.Options{})
	require.NoError(t, err)
	tr := kernfsim.New(s, kernfsim.Options{GP: kernfsim.GPDeferred})
	testkit.Must(sysfs.AddABI(tr, nil))(t)
	long := 30 * time.Second
	m := testkit.Must(MountTree(tr, t.TempDir(), MountOptions{Transport: uring.Config{Only: tp}, Options: Options{EntryTimeout: long, AttrTimeout: long}}))(t)
	unmounted := false
	defer func() {
		if !unmounted {
			m.Unmount()
		}
	}()
	dev := filepath.Join(m.Mountpoint, "devices/kernfsim/d0")
	ctl(t, m.Mountpoint, "new_device", "d0")
	testkit.Must(os.Stat(dev))(t) // the kernel now caches a positive entry for 30 s
	ctl(t, m.Mountpoint, "delete_device", "d0")
	tr.Barrier()
	if _, err := os.Stat(dev); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a deferred teardown and a barrier: stat got %v, want ENOENT (the kernel must have been told)", err)
	}
	const n = 50
	for i := range n {
		ctl(t, m.Mountpoint, "new_device", fmt.Sprintf("e%d", i))
	}
	for i := range n {
		ctl(t, m.Mountpoint, "delete_device", fmt.Sprintf("e%d", i))
	}
	require.NoError(t, m.Unmount())
	unmounted = true
	// each delete_device tears down two nodes: the device and its class link
	if st := tr.Teardowns(); st.Queued != 2*(n+1) || st.Completed != st.Queued {
		t.Fatalf("after unmount with teardowns queued: %+v, want %d queued and all completed", st, 2*(n+1))
	}
}

// hangingShow blocks until its ctx is done (a well-behaved slow source).
type hangingShow struct {
	entered  chan struct{}
	canceled chan struct{}
}

func (h *hangingShow) Show(ctx context.Context, buf *bytes.Buffer) error {
	h.entered <- struct{}{}
	<-ctx.Done()
	close(h.canceled)
	return ctx.Err()
}

// TestInterruptReleasesHangingShow kills a client blocked in a read whose
// Show hangs: the kernel's FUSE INTERRUPT cancels the Show's ctx, the
// request ends, and removing the node completes.
func TestInterruptReleasesHangingShow(t *testing.T) {
	forEachTransport(t, testInterruptReleasesHangingShow)
}

func testInterruptReleasesHangingShow(t *testing.T, tp uring.Kind) {
	tr, _ := newServedTree(t, "rcu")
	m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
	src := &hangingShow{entered: make(chan struct{}), canceled: make(chan struct{})}
	n := testkit.Must(tr.AddAttr(tr.Root(), "hang", 0o444, src))(t)
	cat := exec.Command("cat", filepath.Join(m.Mountpoint, "hang"))
	require.NoError(t, cat.Start())
	<-src.entered
	cat.Process.Kill()
	cat.Wait()
	select {
	case <-src.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("killing the reader did not cancel the hanging Show (no FUSE INTERRUPT reached it)")
	}
	removed := make(chan error, 1)
	go func() { removed <- tr.Remove(context.Background(), n) }()
	select {
	case err := <-removed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("removal of the node stayed blocked after the interrupted read")
	}
}

// waitDraining polls, with a deadline, until want removed nodes of tr wait
// for their users.
func waitDraining(t *testing.T, tr *kernfsim.Tree, want int64) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		if got := tr.Teardowns().Draining; got != want {
			c.Errorf("teardowns draining: got %d, want %d", got, want)
		}
	}, 10*time.Second, 100*time.Microsecond)
}
