package kernfsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// wholeSource shows a value that is only "whole" if every byte agrees with
// the first, and counts the Shows in flight, so a test can tell whether
// Remove waited for them.
type wholeSource struct {
	inflight atomic.Int32
	gen      atomic.Int32
}

const wholeLen = 64

func (w *wholeSource) Show(_ context.Context, buf *bytes.Buffer) error {
	w.inflight.Add(1)
	defer w.inflight.Add(-1)
	c := byte('a' + w.gen.Add(1)%26)
	for range wholeLen {
		buf.WriteByte(c)
		runtime.Gosched() // widen the window in which a removal could race
	}
	return nil
}

func isWhole(b []byte) bool {
	return len(b) == wholeLen && bytes.Count(b, b[:1]) == wholeLen
}

func TestTorture(t *testing.T) {
	for _, procs := range []int{0, 1} {
		t.Run(fmt.Sprintf("gomaxprocs=%d", procs), func(t *testing.T) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			testkit.ForEachLock(t, writers, torture)
		})
	}
}

// torture runs readers walking random device paths while writers add,
// remove and rename devices. Readers may only see whole values, ENOENT or
// ENODEV; Remove must return only after the Shows of its nodes ended; and
// no goroutine may outlive the test.
func torture(t *testing.T, lock string) {
	before := runtime.NumGoroutine()
	tr := newTestTree(t, lock)
	devs := mkpath(t, tr, "devices", "kernfsim")
	w := NewWalker(tr, WalkerOptions{})
	const slots, rounds, readers = 8, 2000, 4
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var reads, bad atomic.Int64
	var badMsg atomic.Value
	var started sync.WaitGroup
	started.Add(readers)
	for r := range readers {
		wg.Go(func() {
			started.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			buf := make([]byte, 2*wholeLen)
			for ctx.Err() == nil {
				path := fmt.Sprintf("devices/kernfsim/dev%d/value", rng.IntN(slots))
				k, err := w.ReadFile(RootCred, path, buf)
				reads.Add(1)
				if err == nil && isWhole(buf[:k]) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENODEV) {
					continue
				}
				bad.Add(1)
				badMsg.Store(fmt.Sprintf("%s: %q, %v", path, buf[:k], err))
			}
		})
	}
	started.Wait()
	tortureWriter(t, tr, devs, slots, rounds, &reads)
	stop()
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d of %d reads saw a torn value or an unexpected error, e.g. %v", bad.Load(), reads.Load(), badMsg.Load())
	}
	if reads.Load() < rounds {
		t.Fatalf("readers made %d reads during %d writer rounds: the test did not interleave", reads.Load(), rounds)
	}
	waitGoroutines(t, before)
}

// tortureWriter adds, renames and removes devices in slots, checking that
// every Remove returned only after in-flight Shows of its node ended.
// Before each change it waits for the readers to have made a read since
// the last one, so the two interleave whatever the scheduler does.
func tortureWriter(t *testing.T, tr *Tree, devs *Node, slots, rounds int, reads *atomic.Int64) {
	rng := rand.New(rand.NewPCG(42, 42))
	srcs := map[*Node]*wholeSource{}
	deadline := time.Now().Add(time.Minute)
	for i := range rounds {
		for seen := reads.Load(); reads.Load() == seen; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d of %d: the readers made no read within a minute of the test's start", i, rounds)
			}
			runtime.Gosched() // let readers run between changes, even on one P
		}
		name := fmt.Sprintf("dev%d", rng.IntN(slots))
		n, err := tr.Lookup(devs, name)
		switch {
		case err != nil:
			d := testkit.Must(tr.Mkdir(devs, name, 0o755))(t)
			src := &wholeSource{}
			srcs[testkit.Must(tr.AddAttr(d, "value", 0o444, src))(t)] = src
		case i%3 == 0:
			tr.Rename(n, devs, fmt.Sprintf("dev%d", rng.IntN(slots))) // EEXIST is fine
		default:
			v := testkit.Must(tr.Lookup(n, "value"))(t)
			require.NoError(t, tr.Remove(context.Background(), n))
			if k := srcs[v].inflight.Load(); k != 0 {
				t.Fatalf("Remove returned with %d reads of its node still in flight", k)
			}
		}
	}
}

// waitGoroutines fails if the goroutine count does not come back to
// before. Lazily started workers (grace periods) need a moment to see they
// are idle, so it polls with a deadline; it never sleeps to synchronise.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, time.Millisecond, func() error {
		if n := runtime.NumGoroutine(); n > before {
			return goroutineLeak{n, before}
		}
		return nil
	})
}

// goroutineLeak is more goroutines than before; its message dumps their
// stacks as they are when the test fails.
type goroutineLeak struct{ n, before int }

func (e goroutineLeak) Error() string {
	buf := make([]byte, 1<<16)
	buf = buf[:runtime.Stack(buf, true)]
	return fmt.Sprintf("goroutines: got %d, want at most %d\n%s", e.n, e.before, buf)
}

// TestDifferential applies one random sequence of operations to a tree
// under every strategy and compares each result with mutex's.
func TestDifferential(t *testing.T) {
	for seed := range uint64(20) {
		want := differentialTrace(t, "mutex", seed)
		for _, lock := range locking.Names {
			got := differentialTrace(t, lock, seed)
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("seed %d, step %d under %s: got %q, want (as mutex) %q", seed, i, lock, got[i], want[i])
				}
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d under %s: %d steps, want %d", seed, lock, len(got), len(want))
			}
		}
	}
}

// differentialTrace runs the operation sequence for seed and returns one
// line per operation. Under none the tree is not sealed, so writers run
// serialised by its build lock.
func differentialTrace(t *testing.T, lock string, seed uint64) []string {
	tr := newTestTree(t, lock)
	w := NewWalker(tr, WalkerOptions{})
	rng := rand.New(rand.NewPCG(seed, 7))
	names := []string{"a", "b", "c", "cpu0", "net", "x"}
	randPath := func() string {
		parts := make([]string, 1+rng.IntN(3))
		for i := range parts {
			parts[i] = names[rng.IntN(len(names))]
		}
		return strings.Join(parts, "/")
	}
	user := Cred{Uid: 1000, Gid: 1000}
	var trace []string
	for range 300 {
		trace = append(trace, differentialStep(tr, w, rng.IntN(9), randPath(), randPath(), names[rng.IntN(len(names))], user))
	}
	return trace
}

func differentialStep(tr *Tree, w *Walker, op int, p, q, name string, user Cred) string {
	res := func(err error) string { return fmt.Sprintf("%d %s %s %s: %v", op, p, q, name, errnoName(err)) }
	parent, err := w.Resolve(RootCred, p)
	if err != nil && op < 7 {
		return res(err)
	}
	switch op {
	case 0:
		_, err = tr.Mkdir(parent, name, 0o755)
	case 1:
		_, err = tr.AddAttr(parent, name, 0o644, NewValue(p+"\n"))
	case 2:
		_, err = tr.Symlink(parent, name, "../"+q)
	case 3:
		err = tr.Remove(context.Background(), parent)
	case 4:
		dst, derr := w.Resolve(RootCred, q)
		if err = derr; err == nil {
			err = tr.Rename(parent, dst, name)
		}
	case 5:
		err = tr.Setattr(parent, SetattrArgs{Valid: SetMode, Mode: 0o700}, RootCred)
	case 6:
		var names []string
		err = tr.Readdir(parent, 0, func(e Dirent) bool { names = append(names, e.Name); return true })
		return res(err) + " " + strings.Join(sortedCopy(names), ",")
	case 7:
		buf := make([]byte, 64)
		k, rerr := w.ReadFile(user, p, buf)
		return res(rerr) + " " + string(buf[:k])
	default:
		st, serr := w.Stat(user, p)
		return res(serr) + fmt.Sprintf(" %v %o %d", st.Kind, st.Mode, st.Nlink)
	}
	return res(err)
}

func sortedCopy(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }
