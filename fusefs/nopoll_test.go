package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// TestPrimeOpensAReadableAttribute checks that the prime picks an
// attribute it can open: a write-only one refuses the open even to root,
// and which attribute comes first depends on the process's name-hash seed,
// so a prime that took the first one failed in some test binaries only,
// and left them open to the POLL deadlock below.
func TestPrimeOpensAReadableAttribute(t *testing.T) {
	s, err := locking.New("rwsem", locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := kernfsim.New(s, kernfsim.Options{})
	for _, name := range []string{"new_device", "delete_device", "unbind"} {
		if _, err := tr.AddAttr(tr.Root(), name, 0o200, kernfsim.Static("")); err != nil {
			t.Fatal(err)
		}
	}
	d, err := tr.Mkdir(tr.Root(), "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AddAttr(d, "value", 0o644, kernfsim.Static("1\n")); err != nil {
		t.Fatal(err)
	}
	if got, ok := firstAttr(tr, tr.Root(), "", 3); !ok || got != "d/value" {
		t.Errorf("firstAttr: %q, %v; want d/value, the only attribute anyone can read", got, ok)
	}
}

// TestNoPollUnderSignals mounts while the process is showered with SIGURG
// (the runtime's preemption signal, which a busy collector sends often),
// then opens files on the mount with os.Open while another goroutine
// collects garbage without pause. A prime that a signal interrupted (its
// POLL failing with EINTR) leaves the kernel sending POLL for the
// runtime's raw epoll_ctl, and a collection that starts meanwhile
// deadlocks the whole process, this test's timers included: a regression
// shows as the test binary's -timeout, with a thread of it in
// request_wait_answer under fuse_file_poll.
func TestNoPollUnderSignals(t *testing.T) {
	fusetest.RequireFUSE(t)
	forEachTransport(t, func(t *testing.T, tp Transport) {
		tr, _ := newServedTree(t, "rcu")
		for range 8 {
			stop, showered := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(showered)
				repeatUntil(stop, func() {
					syscall.Kill(os.Getpid(), syscall.SIGURG)
					time.Sleep(20 * time.Microsecond) // pacing the shower, not synchronising
				})
			}()
			m, err := MountTree(tr, t.TempDir(), MountOptions{Transport: tp})
			close(stop)
			<-showered
			if err != nil {
				t.Fatal(err)
			}
			opened, collected := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(collected)
				repeatUntil(opened, runtime.GC)
			}()
			for i := range 200 {
				if f, err := os.Open(filepath.Join(m.Mountpoint, fmt.Sprintf("devices/system/cpu/cpu%d/topology/core_id", i%4))); err == nil {
					f.Close()
				}
			}
			close(opened)
			<-collected
			if err := m.Unmount(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// repeatUntil calls f until stop is closed.
func repeatUntil(stop <-chan struct{}, f func()) {
	for {
		select {
		case <-stop:
			return
		default:
			f()
		}
	}
}
