package kernelprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/loadgen/latency"
)

// Serve is the child side: the hidden command behind
// Config.Command calls it with its standard input and output.
// Cancel ctx on SIGTERM and SIGINT. The work runs on a fresh OS thread
// that exits with it, so any namespace it entered goes with the thread.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	var spec kernelSpec
	if err := json.NewDecoder(in).Decode(&spec); err != nil {
		return fmt.Errorf("reading the kernel spec: %w", err)
	}
	stop := new(atomic.Bool)
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	var rep kernelReport
	onFreshThread(func() {
		switch spec.Op {
		case UmountStorm:
			rep = umountStorm(spec, stop)
		case Unshare:
			rep = unshareLoop(spec, stop)
		default:
			rep = kernelReport{Err: fmt.Sprintf("unknown kernel operation %q", spec.Op)}
		}
	})
	rep.Interrupted = rep.Interrupted || stop.Load()
	return json.NewEncoder(out).Encode(rep)
}

// onFreshThread runs fn on an OS thread locked to it that exits when fn
// returns, taking any namespace fn entered with it. Not the main thread:
// the runtime cannot end that one (it would stay, wedged, in the
// namespace), and /proc/self shows its namespaces.
func onFreshThread(fn func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked where fn runs
		if unix.Gettid() != unix.Getpid() {
			fn()
			close(done)
			return
		}
		// Hand over to a goroutine, which cannot run on this thread while
		// this one holds it locked.
		started := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(started)
			fn()
			close(done)
		}()
		<-started
		runtime.UnlockOSThread()
	}()
	<-done
}

// cpuClock reads the CPU time of the calling thread, or with children of
// the process and its reaped children.
type cpuClock struct{ withChildren bool }

func (c cpuClock) read() (sys, user time.Duration) {
	var ru unix.Rusage
	who := unix.RUSAGE_THREAD
	if c.withChildren {
		who = unix.RUSAGE_SELF
	}
	unix.Getrusage(who, &ru)
	sys, user = time.Duration(ru.Stime.Nano()), time.Duration(ru.Utime.Nano())
	if c.withChildren {
		unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
		sys, user = sys+time.Duration(ru.Stime.Nano()), user+time.Duration(ru.Utime.Nano())
	}
	return sys, user
}

// timedLoop calls op(i) for i in [0, n) until it fails or stop is set,
// timing each call (one clock read per call).
func timedLoop(n int, stop *atomic.Bool, clock cpuClock, op func(i int) error) (*Phase, error) {
	h := latency.NewHistogram()
	sys0, user0 := clock.read()
	t0 := time.Now()
	var prev time.Duration
	var err error
	i := 0
	for ; i < n && !stop.Load(); i++ {
		if err = op(i); err != nil {
			break
		}
		now := time.Since(t0)
		latency.RecordLatency(h, now-prev)
		prev = now
	}
	sys1, user1 := clock.read()
	return &Phase{Calls: int(h.TotalCount()), Wall: prev, Sys: sys1 - sys0, User: user1 - user0, Latency: latency.Summarize(h)}, err
}

// umountStorm mounts spec.Count tmpfs and unmounts them, in the private
// mount namespace the child was started in.
func umountStorm(spec kernelSpec, stop *atomic.Bool) kernelReport {
	dir, paths, err := stormDirs(spec)
	if err != nil {
		return kernelReport{Err: "umount-storm: " + err.Error()}
	}
	rep := kernelReport{Dir: dir}
	rep.Mount, err = timedLoop(len(paths), stop, cpuClock{}, func(i int) error {
		return unix.Mount(stormSource, paths[i], "tmpfs", 0, "size=64k")
	})
	if err != nil {
		rep.Err = fmt.Sprintf("umount-storm: mount %d of %d: %v", rep.Mount.Calls+1, spec.Count, err)
	}
	flags := 0
	if spec.Lazy {
		flags = unix.MNT_DETACH
	}
	never := new(atomic.Bool) // unmount all that was mounted, even when asked to stop
	rep.Umount, err = timedLoop(rep.Mount.Calls, never, cpuClock{}, func(i int) error {
		return unix.Unmount(paths[i], flags)
	})
	if err != nil && rep.Err == "" {
		rep.Err = fmt.Sprintf("umount-storm: umount %d: %v", rep.Umount.Calls+1, err)
	}
	return rep
}

// stormDirs checks that this process is not in the host's mount
// namespace, mounts a tmpfs over $TMPDIR, and makes a fresh directory
// there with spec.Count empty directories to mount on.
func stormDirs(spec kernelSpec) (dir string, paths []string, err error) {
	if ns, err := os.Readlink("/proc/self/ns/mnt"); err != nil || ns == spec.HostMntNS {
		return "", nil, fmt.Errorf("refusing to mount: not in a private mount namespace (%s, %v)", ns, err)
	}
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "", nil, fmt.Errorf("making / private: %w", err)
	}
	base := os.TempDir()
	if err := unix.Mount(stormSource, base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return "", nil, fmt.Errorf("mounting a tmpfs over %s: %w", base, err)
	}
	if dir, err = os.MkdirTemp(base, stormSource+"-"); err != nil {
		return "", nil, err
	}
	paths = make([]string, spec.Count)
	for i := range paths {
		paths[i] = filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(paths[i], 0o755); err != nil {
			return "", nil, err
		}
	}
	return dir, paths, nil
}

// unshareLoop unshares spec.NS spec.Count times on this thread, or for
// pid forks true(1) into a new pid namespace per iteration, alternating
// with the same fork without the flag (the baseline), so that drift in
// the machine hits both alike.
func unshareLoop(spec kernelSpec, stop *atomic.Bool) kernelReport {
	var rep kernelReport
	var err error
	if spec.NS != "pid" {
		flag := unshareFlags[spec.NS]
		rep.Unshare, err = timedLoop(spec.Count, stop, cpuClock{}, func(int) error { return unix.Unshare(flag) })
	} else {
		fork := func(flags uintptr) error {
			cmd := exec.Command(spec.True)
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
			return cmd.Run()
		}
		var ph [2]*Phase
		ph, err = alternateTimed(spec.Count, stop, cpuClock{withChildren: true},
			func() error { return fork(unix.CLONE_NEWPID) }, func() error { return fork(0) })
		rep.Unshare, rep.Baseline = ph[0], ph[1]
	}
	if err != nil {
		rep.Err = fmt.Sprintf("unshare(%s): %v", unshareFlagNames[spec.NS], err)
	}
	return rep
}

// alternateTimed calls a then b, n times or until one fails or stop is set,
// timing each call and the CPU time around it.
func alternateTimed(n int, stop *atomic.Bool, clock cpuClock, a, b func() error) ([2]*Phase, error) {
	ops := [2]func() error{a, b}
	hs := [2]*hdrhistogram.Histogram{latency.NewHistogram(), latency.NewHistogram()}
	var out [2]*Phase
	for k := range out {
		out[k] = &Phase{}
	}
	var err error
	for i := 0; i < n && !stop.Load() && err == nil; i++ {
		for k, op := range ops {
			sys0, user0 := clock.read()
			t0 := time.Now()
			if err = op(); err != nil {
				break
			}
			d := time.Since(t0)
			sys1, user1 := clock.read()
			latency.RecordLatency(hs[k], d)
			p := out[k]
			p.Calls, p.Wall, p.Sys, p.User = p.Calls+1, p.Wall+d, p.Sys+sys1-sys0, p.User+user1-user0
		}
	}
	for k := range out {
		out[k].Latency = latency.Summarize(hs[k])
	}
	return out, err
}
