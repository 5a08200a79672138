package fusefs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// TestURingUnavailable plays a kernel without io_uring: --transport uring
// is refused as a usage error naming what to do, and auto serves over
// /dev/fuse, saying why.
func TestURingUnavailable(t *testing.T) {
	tr, _ := newServedTree(t, "rcu")
	saved := uringCheck
	uringCheck = func() error {
		return errors.Join(uring.ErrUnavailable, errors.New("as root, run: echo 1 > "+uring.EnableParam))
	}
	defer func() { uringCheck = saved }()
	_, err := MountTree(tr, t.TempDir(), MountOptions{Transport: TransportURing})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "enable_uring") || !strings.Contains(err.Error(), "--transport devfuse") {
		t.Fatalf("--transport uring without io_uring: got %v, want a usage error naming enable_uring and --transport devfuse", err)
	}
	m := mountTest(t, tr, MountOptions{Transport: TransportAuto})
	if m.Transport != TransportDevFuse || !errors.Is(m.FellBack, uring.ErrUnavailable) {
		t.Fatalf("auto without io_uring: serving over %s, fell back because %v; want devfuse and the reason", m.Transport, m.FellBack)
	}
}

// panicShow panics in Show: a broken attribute.
type panicShow struct{}

func (panicShow) Show(context.Context, *bytes.Buffer) error { panic("broken attribute") }

// TestHandlerPanicAnswersEIO reads an attribute whose Show panics, more
// often than there are queues and ring entries: each read fails with EIO
// and the mount keeps serving.
func TestHandlerPanicAnswersEIO(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp Transport) {
		tr, _ := newServedTree(t, "rcu")
		m := mountTest(t, tr, MountOptions{Transport: tp})
		must(tr.AddAttr(tr.Root(), "broken", 0o444, panicShow{}))(t)
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
	forEachTransport(t, func(t *testing.T, tp Transport) {
		tr, sf := newServedTree(t, "rcu")
		m := mountTest(t, tr, MountOptions{Transport: tp})
		sf.Bind(m.Server)
		must(os.ReadFile(filepath.Join(m.Mountpoint, "devices/system/cpu/cpu0/topology/core_id")))(t)
		b := must(os.ReadFile(filepath.Join(m.Mountpoint, "kernel/kernfsim/stats")))(t)
		st := must(client.ParseStats(b))(t)
		if st.Transport != string(tp) {
			t.Fatalf("stats over %s: server.transport %q", tp, st.Transport)
		}
		cpus := must(uring.PossibleCPUs())(t)
		if tp == TransportURing && (st.Queues != uint64(cpus) || st.QueueDepth != uring.DefaultDepth || !strings.Contains(string(b), "transport.queue0.requests ")) {
			t.Fatalf("stats over io_uring: %d queues of depth %d (want %d of %d), per-queue counts in\n%s", st.Queues, st.QueueDepth, cpus, uring.DefaultDepth, b)
		}
	})
}
