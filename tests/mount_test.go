package tests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTreeListsMount checks that `kernfsim tree` with the same tree flags
// lists exactly what the mount serves: types, modes, paths and symlink
// targets, the in-tree ABI included.
func TestTreeListsMount(t *testing.T) {
	for _, lock := range allLocks {
		t.Run("lock="+lock, func(t *testing.T) {
			t.Parallel()
			flags := append([]string{"--lock", lock}, smallTree...)
			s := startServer(t, newMountpoint(t), flags...)
			s.wantStatus(t, lock)
			r := runKernfsim(t, append([]string{"tree"}, smallTree...)...) // the same tree under every lock
			if r.code != 0 {
				t.Fatalf("kernfsim tree: exit status got %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			want := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			got := walkMount(t, s.mnt)
			diffLines(t, got, want)
			for _, abi := range []string{"f 0200 bus/kernfsim/new_device", "f 0200 bus/kernfsim/delete_device", "d 0755 devices/kernfsim", "d 0755 class/kernfsim", "f 0444 kernel/kernfsim/stats"} {
				if !slices.Contains(got, abi) {
					t.Errorf("the mount does not serve %q", abi)
				}
			}
			if len(got) < 300 {
				t.Errorf("walked %d paths, want at least 300 for this tree", len(got))
			}
		})
	}
}

// walkMount lists every path below mnt as `kernfsim tree` prints it:
// "d 0755 devices", "f 0444 .../core_id", "l 0777 class/net/lo -> TARGET",
// sorted.
func walkMount(t testing.TB, mnt string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(mnt, func(path string, _ fs.DirEntry, err error) error {
		if err != nil || path == mnt {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, path)
		line, err := treeLine(fi, path, rel)
		lines = append(lines, line)
		return err
	})
	require.NoError(t, err, "walking %s", mnt)
	slices.Sort(lines)
	return lines
}

func treeLine(fi fs.FileInfo, path, rel string) (string, error) {
	kind := map[fs.FileMode]string{0: "f", fs.ModeDir: "d", fs.ModeSymlink: "l"}[fi.Mode().Type()]
	if kind == "" {
		kind = "?" + fi.Mode().Type().String()
	}
	line := fmt.Sprintf("%s %04o %s", kind, uint32(fi.Mode().Perm()), rel)
	if kind != "l" {
		return line, nil
	}
	target, err := os.Readlink(path)
	return line + " -> " + target, err
}

// diffLines reports the lines only in got and only in want (sorted first).
func diffLines(t testing.TB, got, want []string) {
	t.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	var onlyGot, onlyWant []string
	for _, l := range got {
		if _, ok := slices.BinarySearch(want, l); !ok {
			onlyGot = append(onlyGot, l)
		}
	}
	for _, l := range want {
		if _, ok := slices.BinarySearch(got, l); !ok {
			onlyWant = append(onlyWant, l)
		}
	}
	if len(onlyGot)+len(onlyWant) > 0 || len(got) != len(want) {
		t.Errorf("got %d lines, want %d\nonly in the mount (%d):\n%s\nonly in kernfsim tree (%d):\n%s",
			len(got), len(want), len(onlyGot), head(onlyGot, 20), len(onlyWant), head(onlyWant, 20))
	}
}

func head(lines []string, n int) string {
	if len(lines) > n {
		lines = append(lines[:n:n], fmt.Sprintf("... and %d more", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

// TestSIGTERMUnderLoad sends SIGTERM while 16 clients hammer the mount:
// the server must unmount and exit 0 promptly (the requirement is within
// 2 s; the test fails only past 10 s and logs what it measured).
func TestSIGTERMUnderLoad(t *testing.T) {
	for _, tp := range transports(t) {
		t.Run("transport="+tp.name, func(t *testing.T) { testSIGTERMUnderLoad(t, tp.args) })
	}
}

func testSIGTERMUnderLoad(t *testing.T, transport []string) {
	for _, lock := range allLocks {
		t.Run("lock="+lock, func(t *testing.T) {
			s := startServer(t, newMountpoint(t), append(append([]string{"--lock", lock}, transport...), smallTree...)...)
			h := startHammer(t, s.mnt, 16)
			h.signalled.Store(true)
			ops := h.ops.Load()
			d := s.stop(t)
			h.finish(t)
			t.Logf("lock=%s: SIGTERM to exit %v under 16 clients (%d operations before the signal, server race-enabled: %v)", lock, d.Round(time.Microsecond), ops, raceBuild)
			if d > 2*time.Second {
				t.Logf("lock=%s: SIGTERM to exit took %v, over the required 2 s", lock, d)
			}
		})
	}
}

// hammer is a set of client goroutines reading and looking up through a
// mount until told to stop.
type hammer struct {
	stop, signalled atomic.Bool
	wg              sync.WaitGroup
	ops             atomic.Int64 // successful operations
	mu              sync.Mutex
	errs            []error // protected by mu: the first errors before the signal
}

// startHammer starts n clients on mnt and returns once each has done
// warmup successful operations. Each client alternates open/read/close of
// cpuN/topology/core_id with a lookup of a missing name. The clients stop
// when the test ends, before its server is stopped.
func startHammer(t testing.TB, mnt string, n int) *hammer {
	t.Helper()
	const warmup = 100
	h := new(hammer)
	var ready sync.WaitGroup
	ready.Add(n)
	for i := range n {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.client(mnt, i, func() { ready.Done() }, warmup)
		}()
	}
	t.Cleanup(func() { h.stop.Store(true); h.wg.Wait() }) // runs before the server's cleanup
	readyc := make(chan struct{})
	go func() { ready.Wait(); close(readyc) }()
	select {
	case <-readyc:
	case <-time.After(statusDeadline):
		t.Fatalf("the clients did not complete %d operations each within %v: %v", warmup, statusDeadline, h.errors())
	}
	require.NoError(t, h.errors(), "before SIGTERM")
	return h
}

func (h *hammer) client(mnt string, i int, ready func(), warmup int) {
	attr := filepath.Join(mnt, fmt.Sprintf("devices/system/cpu/cpu%d/topology/core_id", i%4))
	missing := filepath.Join(mnt, fmt.Sprintf("devices/system/cpu/cpu%d/nosuch%d", i%4, i))
	buf := make([]byte, 64)
	ok := 0
	for !h.stop.Load() {
		var err error
		if ok%2 == 0 {
			err = openRead(attr, buf)
		} else if _, err = os.Lstat(missing); errors.Is(err, fs.ErrNotExist) {
			err = nil
		} else if err == nil {
			err = fmt.Errorf("lstat %s: exists", missing)
		}
		if err != nil {
			h.record(err)
			continue
		}
		h.ops.Add(1)
		if ok++; ok == warmup {
			ready()
		}
	}
	if ok < warmup {
		ready() // never reached warmup: let startHammer report the errors
	}
}

// openRead opens path, reads it once (it must not be empty) and closes it.
func openRead(path string, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	n, err := f.Read(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n == 0 {
		err = fmt.Errorf("read %s: empty", path)
	}
	return err
}

// record keeps the first few errors seen before the signal.
func (h *hammer) record(err error) {
	if h.signalled.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) < 10 {
		h.errs = append(h.errs, err)
	}
}

func (h *hammer) errors() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return errors.Join(h.errs...)
}

// finish stops the clients and checks they all return: none may stay
// blocked on the gone server.
func (h *hammer) finish(t testing.TB) {
	t.Helper()
	h.stop.Store(true)
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(exitDeadline):
		t.Fatalf("clients still blocked %v after the server exited", exitDeadline)
	}
	assert.NoError(t, h.errors(), "client errors before SIGTERM")
}
