package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/fusetest"
	"github.com/kernfsim/kernfsim/internal/testkit"
)

// transports are the extra `kernfsim mount` arguments the reliability
// tests run under, one row per way of serving the mount.
func transports(t *testing.T) []transportRow {
	rows := []transportRow{{"devfuse", []string{"--transport", "devfuse"}}}
	if fusetest.URing(t) {
		rows = append(rows, transportRow{"uring", []string{"--transport", "uring"}})
	}
	return rows
}

type transportRow struct {
	name string
	args []string
}

// raceLocks are the strategies (with their grace-period policy) that
// accept new_device after the tree is built.
var raceLocks = [][]string{
	{"--lock", "mutex"},
	{"--lock", "rwsem"},
	{"--lock", "rcu", "--gp", "normal"},
	{"--lock", "rcu", "--gp", "expedited"},
	{"--lock", "rcu", "--gp", "deferred"},
}

// TestCreateDeleteRaceOverFUSE races three writers of new_device and three
// of delete_device for one name through a real mount: the only errors
// are EEXIST and ENODEV, the successes add up to what is left, and what
// is left is a whole device or nothing.
func TestCreateDeleteRaceOverFUSE(t *testing.T) {
	for _, tp := range transports(t) {
		for _, lock := range raceLocks {
			t.Run(fmt.Sprintf("transport=%s/%s=%s", tp.name, lock[1], lock[len(lock)-1]), func(t *testing.T) {
				mnt := newMountpoint(t)
				args := append(append(append([]string{}, lock...), tp.args...), smallTree...)
				startServer(t, mnt, args...)
				var created, deleted atomic.Int64
				var bad atomic.Value
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(func() { raceCtl(mnt, "new_device", "racer0 4", &created, syscall.EEXIST, &bad) })
					wg.Go(func() { raceCtl(mnt, "delete_device", "racer0", &deleted, syscall.ENODEV, &bad) })
				}
				wg.Wait()
				if msg := bad.Load(); msg != nil {
					t.Error(msg)
				}
				checkWholeDevice(t, mnt, created.Load()-deleted.Load())
			})
		}
	}
}

// raceCtl writes data to a control file 200 times, counting successes in
// ok and recording in bad the first error other than allowed.
func raceCtl(mnt, file, data string, ok *atomic.Int64, allowed syscall.Errno, bad *atomic.Value) {
	path := filepath.Join(mnt, "bus/kernfsim", file)
	for range 200 {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write([]byte(data))
			f.Close()
		}
		switch {
		case err == nil:
			ok.Add(1)
		case !errors.Is(err, allowed):
			bad.CompareAndSwap(nil, fmt.Sprintf("write %q to %s: %v (only success or %v is true here)", data, file, err, allowed))
		}
	}
}

// checkWholeDevice checks that racer0 exists whole (directory with its 7
// attributes, class link leading to it) if exists is 1, not at all if 0.
func checkWholeDevice(t *testing.T, mnt string, exists int64) {
	t.Helper()
	if exists != 0 && exists != 1 {
		t.Fatalf("successful creates minus successful deletes: got %d, want 0 or 1", exists)
	}
	_, dirErr := os.Lstat(filepath.Join(mnt, "devices/kernfsim/racer0"))
	_, linkErr := os.Lstat(filepath.Join(mnt, "class/kernfsim/racer0"))
	if (dirErr == nil) != (linkErr == nil) {
		t.Fatalf("device directory: %v; class link: %v; want both or neither", dirErr, linkErr)
	}
	if got := dirErr == nil; got != (exists == 1) {
		t.Fatalf("device exists: got %v, want %v (from the successful replies)", got, exists == 1)
	}
	if exists == 0 {
		return
	}
	ents, err := os.ReadDir(filepath.Join(mnt, "class/kernfsim/racer0/"))
	if err != nil || len(ents) != 7 {
		t.Fatalf("the class link does not lead to a whole device: %d entries, %v; want 7", len(ents), err)
	}
}

// TestSIGTERMWithOpenFile sends SIGTERM while a client holds a file of the
// mount open (so a plain unmount is busy): the server must end the
// connection without /sys/fs/fuse/connections, unmount, exit 0 within
// 2 s, and claim no abort that did not happen. The client's fd then fails
// with ENOTCONN or ECONNABORTED.
func TestSIGTERMWithOpenFile(t *testing.T) {
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) {
			mnt := newMountpoint(t)
			s := startServer(t, mnt, append(append([]string{"--lock", "rwsem"}, tp.args...), smallTree...)...)
			f, err := os.Open(filepath.Join(mnt, "devices/system/cpu/cpu0/topology/core_id"))
			require.NoError(t, err)
			defer f.Close()
			d := s.stop(t)
			if d > 2*time.Second {
				t.Errorf("SIGTERM to exit with a file open: %v, want within 2 s; stderr:\n%s", d, s.stderr)
			}
			if strings.Contains(s.stderr.String(), "did not stop") {
				t.Errorf("stderr reports a failure on a clean exit:\n%s", s.stderr)
			}
			if _, err := f.Read(make([]byte, 8)); err == nil {
				t.Errorf("read from a file of the stopped mount: got success, want ENOTCONN or ECONNABORTED")
			}
		})
	}
}

// TestSIGTERMWithNestedMount stops a server whose mount has another
// kernfsim mount inside it: the outer server says it takes the inner
// mount with it, exits 0 and leaves nothing mounted; the inner server sees
// its mount gone and stops too.
func TestSIGTERMWithNestedMount(t *testing.T) {
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) {
			mnt := newMountpoint(t)
			outer := startServer(t, mnt, append(append([]string{"--lock", "rwsem"}, tp.args...), smallTree...)...)
			innerMnt := filepath.Join(mnt, "devices/kernfsim")
			inner := startServer(t, innerMnt, append(append([]string{"--lock", "rcu"}, tp.args...), smallTree...)...)
			outer.stop(t)
			if want := "go with it (detached, as umount -l would): " + innerMnt; !strings.Contains(outer.stderr.String(), want) {
				t.Errorf("outer server's stderr: got %q, want it to name the inner mount (%q)", outer.stderr, want)
			}
			select {
			case <-inner.done:
			case <-time.After(exitDeadline):
				t.Fatalf("inner server still running %v after its mount was detached", exitDeadline)
			}
		})
	}
}

// TestLowFDLimit starts servers under low open-file limits: with the hard
// limit below what a server needs, mount exits 2 naming the limit and
// leaves nothing mounted; with only the soft limit low, it raises it and
// serves reads.
func TestLowFDLimit(t *testing.T) {
	testkit.RequireFUSE(t)
	for _, n := range []int{10, 12, 63} {
		t.Run(fmt.Sprintf("hard=%d", n), func(t *testing.T) {
			mnt := newMountpoint(t)
			r := runKernfsimShell(t, fmt.Sprintf("ulimit -n %d", n), append([]string{"mount", mnt}, smallTree...)...)
			if r.code != 2 || !strings.Contains(r.stderr, "open-file limit is") || !strings.Contains(r.stderr, "ulimit -n 64") {
				t.Errorf("exit %d, stderr %q: want exit 2 naming the limit and what to raise it to", r.code, r.stderr)
			}
			if isMounted(t, mnt) {
				t.Errorf("%s is mounted after a refused start", mnt)
			}
		})
	}
	t.Run("soft=10", func(t *testing.T) {
		s := startServerIn(t, "ulimit -Sn 10", newMountpoint(t), smallTree...)
		h := startHammer(t, s.mnt, 16)
		h.signalled.Store(true)
		s.stop(t)
		h.finish(t)
	})
}
