package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// TestURingUnavailable: where package uring rules io_uring out
// (uring.ErrNotOffered), Transport uring is refused as a usage error
// naming what to do; where io_uring cannot be had as configured, auto
// serves over /dev/fuse, saying why, and uring fails as a *SettingError.
func TestURingUnavailable(t *testing.T) {
	notOffered := fmt.Errorf("%w: as root, run: echo 1 > %s", uring.ErrNotOffered, uring.EnableParam)
	err := transportError(t.TempDir(), notOffered)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "enable_uring") || !strings.Contains(err.Error(), "Transport=devfuse") {
		t.Fatalf("Transport uring without io_uring: got %v, want a usage error naming enable_uring and Transport=devfuse", err)
	}
	flags := func(s Setting) string { return "--" + strings.ToLower(s.Field) + " " + s.Value }
	if got := ue.Text(flags); !strings.HasPrefix(got, "--transport uring: ") || !strings.HasSuffix(got, "; or use --transport devfuse") {
		t.Errorf("Text with flags: got %q, want it to name --transport uring and --transport devfuse", got)
	}
	tr, _ := newServedTree(t, "rcu")
	noRoom := uring.Config{MaxPinnedBytes: 1} // not even one entry per queue fits
	m := mountTest(t, tr, MountOptions{Transport: noRoom})
	if m.Transport() != uring.DevFuse || !errors.Is(m.FellBack(), uring.ErrUnavailable) {
		t.Fatalf("auto without io_uring: serving over %s, fell back because %v; want devfuse and the reason", m.Transport(), m.FellBack())
	}
	if fusetest.URing(t) {
		noRoom.Only = uring.URing
		_, err := MountTree(tr, t.TempDir(), MountOptions{Transport: noRoom})
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != settingTransportURing || !errors.Is(err, uring.ErrPinnedCap) {
			t.Errorf("Transport uring that cannot be had as configured: got %v, want a *SettingError naming Transport=uring and the cap", err)
		}
	}
}

// panicShow panics in Show: a broken attribute.
type panicShow struct{}

func (panicShow) Show(context.Context, *bytes.Buffer) error { panic("broken attribute") }

// TestHandlerPanicAnswersEIO reads an attribute whose Show panics, more
// often than there are queues and ring entries: each read fails with EIO
// and the mount keeps serving.
func TestHandlerPanicAnswersEIO(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		tr, _ := newServedTree(t, "rcu")
		m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
		testkit.Must(tr.AddAttr(tr.Root(), "broken", 0o444, panicShow{}))(t)
		for range 4 * uring.DefaultDepth * 2 {
			if _, err := os.ReadFile(filepath.Join(m.Mountpoint, "broken")); !errors.Is(err, syscall.EIO) {
				t.Fatalf("read of an attribute whose Show panics: got %v, want EIO", err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(m.Mountpoint, "devices/system/cpu/cpu0/topology/core_id")); err != nil || string(b) != "0\n" {
			t.Fatalf("after the panics: read got %q, %v; want \"0\\n\"", b, err)
		}
	})
}

// TestStatsShowTransport checks the stats file names the transport and,
// over io_uring, counts requests per queue.
func TestStatsShowTransport(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		tr, sf := newServedTree(t, "rcu")
		m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}, Stats: sf})
		testkit.Must(os.ReadFile(filepath.Join(m.Mountpoint, "devices/system/cpu/cpu0/topology/core_id")))(t)
		b := testkit.Must(os.ReadFile(filepath.Join(m.Mountpoint, "kernel/kernfsim/stats")))(t)
		st := testkit.Must(client.ParseStats(b))(t)
		if st.Transport != string(tp) {
			t.Fatalf("stats over %s: server.transport %q", tp, st.Transport)
		}
		assert.False(t, st.DeferTaskRun, "transport.defer_taskrun of a default mount")
		cpus := testkit.Must(uring.PossibleCPUs())(t)
		if tp == uring.URing && (st.Queues != uint64(cpus) || st.QueueDepth != uring.DefaultDepth || !strings.Contains(string(b), "transport.queue0.requests ")) {
			t.Fatalf("stats over io_uring: %d queues of depth %d (want %d of %d), per-queue counts in\n%s", st.Queues, st.QueueDepth, cpus, uring.DefaultDepth, b)
		}
		if tp == uring.URing && (st.TransportThreads == 0 || !strings.Contains(string(b), "transport.handoffs ") || !strings.Contains(string(b), "transport.entries_grown ")) {
			t.Fatalf("stats over io_uring: no threads (%d), or no handoff and growth counts, in\n%s", st.TransportThreads, b)
		}
	})
}

// blockingStore is an attribute whose Store waits until release is closed.
type blockingStore struct{ started, release chan struct{} }

func (b *blockingStore) Show(context.Context, *bytes.Buffer) error { return nil }

func (b *blockingStore) Store(context.Context, []byte) error {
	close(b.started)
	<-b.release
	return nil
}

// TestBlockingStoreDoesNotHoldItsQueue writes to an attribute whose Store
// blocks (as delete_device waits a grace period under --gp normal), then
// stats a file from the same CPU: over io_uring both requests are the
// same queue's, and the stat must not wait for the store.
func TestBlockingStoreDoesNotHoldItsQueue(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		checkBlockingStore(t, MountOptions{Transport: uring.Config{Only: tp}})
	})
}

// checkBlockingStore is TestBlockingStoreDoesNotHoldItsQueue on a mount
// with opts.
func checkBlockingStore(t *testing.T, opts MountOptions) {
	tr, _ := newServedTree(t, "rcu")
	m := mountTest(t, tr, opts)
	bs := &blockingStore{started: make(chan struct{}), release: make(chan struct{})}
	testkit.Must(tr.AddAttr(tr.Root(), "blocking_store", 0o200, bs))(t)
	wrote := make(chan error, 1)
	onCPU0(t, func() error {
		f, err := os.OpenFile(filepath.Join(m.Mountpoint, "blocking_store"), os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write([]byte("x"))
			f.Close()
		}
		return err
	}, wrote)
	select {
	case <-bs.started:
	case err := <-wrote:
		t.Fatalf("the write returned (%v) before its store started", err)
	case <-time.After(30 * time.Second):
		abortConnection(t, m)
		awaitBounded(t, "the write", wrote)
		t.Fatal("the store did not start within 30 s")
	}
	statted := make(chan error, 1)
	onCPU0(t, func() error {
		_, err := os.Stat(filepath.Join(m.Mountpoint, "devices/system/cpu/cpu0/topology/core_id"))
		return err
	}, statted)
	select {
	case err := <-statted:
		assert.NoError(t, err, "stat while a store blocks")
	case <-time.After(30 * time.Second):
		t.Errorf("a stat from the store's CPU waited 30 s for the blocked store")
		defer awaitBounded(t, "the stat", statted) // it ends once the store has returned
	}
	close(bs.release)
	select {
	case err := <-wrote:
		assert.NoError(t, err, "write to the blocking attribute")
	case <-time.After(30 * time.Second):
		// The store returned, but its reply never reached the kernel:
		// abort, so that the writer ends and the test fails, not hangs.
		t.Errorf("the write did not return within 30 s of its store")
		abortConnection(t, m)
		awaitBounded(t, "the write", wrote)
	}
}

// TestDeferTaskRun serves over rings set up with deferred task work: the
// stats file says so (TestStatsShowTransport checks that a default mount
// says not), the whole tree reads as it is, and a blocked store keeps its
// queue free (its reply reaches the queue thread through the wake
// eventfd, whose poll then completes as deferred work).
func TestDeferTaskRun(t *testing.T) {
	testkit.RequireFUSE(t)
	if !fusetest.URing(t) {
		t.Skip("io_uring unavailable")
	}
	opts := MountOptions{Transport: uring.Config{Only: uring.URing, DeferTaskRun: true}}
	tr, sf := newServedTree(t, "rcu")
	withStats := opts
	withStats.Stats = sf
	m := mountTest(t, tr, withStats)
	tr.Freeze(true)
	compareWithTree(t, tr, m.Mountpoint)
	tr.Freeze(false)
	st := testkit.Must(client.ParseStats(testkit.Must(os.ReadFile(filepath.Join(m.Mountpoint, "kernel/kernfsim/stats")))(t)))(t)
	assert.Equal(t, "uring", st.Transport)
	assert.True(t, st.DeferTaskRun, "transport.defer_taskrun")
	checkBlockingStore(t, opts)
}

// onCPU0 runs f on a thread pinned to CPU 0 and sends its error to done.
// The thread ends with the goroutine (it is never unlocked), so no pinned
// thread goes back to the runtime.
func onCPU0(t *testing.T, f func() error, done chan<- error) {
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
}

// TestDebugLogsRingRequests mounts over io_uring with Debug: every
// request the queues serve is logged, as go-fuse logs those it serves on
// /dev/fuse.
func TestDebugLogsRingRequests(t *testing.T) {
	testkit.RequireFUSE(t)
	if !fusetest.URing(t) {
		t.Skip("io_uring unavailable")
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "debug.log")) // safe for concurrent writers
	require.NoError(t, err)
	saved := log.Writer()
	log.SetOutput(logFile)
	defer log.SetOutput(saved)
	tr, _ := newServedTree(t, "rcu")
	m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: uring.URing}, Debug: true})
	testkit.Must(os.ReadFile(filepath.Join(m.Mountpoint, "devices/system/cpu/cpu0/topology/core_id")))(t)
	b, err := os.ReadFile(logFile.Name())
	require.NoError(t, err)
	for _, want := range []string{`LOOKUP n1 "devices"`, "(queue ", "READ n", "tx "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the debug log over io_uring lacks %q:\n%s", want, b)
		}
	}
}
