package fusefs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// TestPrimeNeedsNoAttribute mounts trees that offer the prime nothing to
// open (an attribute only five levels down, or one that only root may
// read), opens their files from this process while another goroutine
// collects garbage without pause, and checks that no POLL reached the
// server after the prime. A prime that looked for an attribute in the
// tree skipped itself on such trees, and the first os.Open deadlocked
// with the collector.
func TestPrimeNeedsNoAttribute(t *testing.T) {
	testkit.RequireFUSE(t)
	trees := map[string]func(t *testing.T) (*kernfsim.Tree, string){
		"deep":      func(t *testing.T) (*kernfsim.Tree, string) { return attrTree(t, "a/b/c/d", 0o444) },
		"root-only": func(t *testing.T) (*kernfsim.Tree, string) { return attrTree(t, "", 0o400) },
	}
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
		for name, build := range trees {
			t.Run("tree="+name, func(t *testing.T) {
				tr, file := build(t)
				m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: tp}})
				opened, collected := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(collected)
					repeatUntil(opened, runtime.GC)
				}()
				for range 200 {
					f, err := os.Open(filepath.Join(m.Mountpoint, file))
					if err != nil {
						close(opened)
						<-collected
						t.Fatal(err)
					}
					f.Close()
				}
				close(opened)
				<-collected
				requireNoPolls(t, m)
			})
		}
	})
}

// attrTree is a sealed tree whose only attribute is dir/f, with mode.
func attrTree(t *testing.T, dir string, mode fs.FileMode) (*kernfsim.Tree, string) {
	t.Helper()
	s, err := locking.New("rwsem", locking.Options{})
	require.NoError(t, err)
	tr := kernfsim.New(s, kernfsim.Options{})
	d := tr.Root()
	for _, name := range strings.FieldsFunc(dir, func(r rune) bool { return r == '/' }) {
		if d, err = tr.Mkdir(d, name, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Must(tr.AddAttr(d, "f", mode, kernfsim.Static("1\n")))(t)
	tr.Seal()
	return tr, filepath.Join(dir, "f")
}

// requireNoPolls fails the test if a FUSE POLL reached m's server after
// the mount's prime.
func requireNoPolls(t *testing.T, m *Mount) {
	t.Helper()
	if n := m.Server.PollsAfterPrime(); n != 0 {
		t.Fatalf("%d FUSE POLL requests reached the server after the prime over %s: each can deadlock an in-process client with the garbage collector", n, m.Transport())
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
	testkit.RequireFUSE(t)
	forEachTransport(t, func(t *testing.T, tp uring.Kind) {
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
			m, err := MountTree(tr, t.TempDir(), MountOptions{Transport: uring.Config{Only: tp}})
			close(stop)
			<-showered
			require.NoError(t, err)
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
			requireNoPolls(t, m)
			require.NoError(t, m.Unmount())
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

// TestPrimeIsCounted checks that the server sees the prime's POLL over
// io_uring, so that PollsAfterPrime counts what it says it counts.
func TestPrimeIsCounted(t *testing.T) {
	testkit.RequireFUSE(t)
	if !fusetest.URing(t) {
		t.Skip("io_uring unavailable")
	}
	tr, _ := newServedTree(t, "rcu")
	m := mountTest(t, tr, MountOptions{Transport: uring.Config{Only: uring.URing}})
	if n := m.srv.Polls(); n != 1 {
		t.Fatalf("the queues answered %d POLL requests during the mount, want 1 (the prime's)", n)
	}
}
