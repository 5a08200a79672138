package kernelprobe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/loadgen/latency"
)

// Each reproduction's child keeps what it makes from loadgen and the host
// (the package doc says how the child is started):
//
//   - umount-storm's child is started with CLONE_NEWNS (Go's
//     SysProcAttr.Unshareflags, which also makes / rprivate), so it is the
//     only process in its mount namespace. It mounts a tmpfs over $TMPDIR
//     there, makes a fresh directory in it, mounts Count tmpfs below and
//     unmounts them. Should loadgen or the child be killed, the namespace
//     dies with the child (Pdeathsig SIGKILL kills the child with
//     loadgen) and the kernel detaches every mount in it: nothing reaches
//     the host's mount table, not even a directory.
//   - unshare's child loops on one locked OS thread that exits with the
//     loop, so the namespaces it made die with that thread.
//
// The protocol: the spec as one JSON line on the child's standard input,
// its report as one JSON line on its standard output. SIGTERM or SIGINT
// stop the child's loop early; it still reports.

// Namespaces unshare can make, and their flags.
var (
	UnshareNamespaces = []string{"ipc", "net", "mnt", "uts", "pid"}
	unshareFlags      = map[string]int{"ipc": unix.CLONE_NEWIPC, "net": unix.CLONE_NEWNET,
		"mnt": unix.CLONE_NEWNS, "uts": unix.CLONE_NEWUTS, "pid": unix.CLONE_NEWPID}
	unshareFlagNames = map[string]string{"ipc": "CLONE_NEWIPC", "net": "CLONE_NEWNET",
		"mnt": "CLONE_NEWNS", "uts": "CLONE_NEWUTS", "pid": "CLONE_NEWPID"}
)

// Kernel operations.
const (
	UmountStorm = "umount-storm"
	Unshare     = "unshare"
	// stormSource is the source name of every tmpfs the storm mounts, so
	// that a leak would be recognisable in any mount table.
	stormSource = "loadgen-umount-storm"
)

// Config is one real-kernel reproduction.
type Config struct {
	Op    string // UmountStorm or Unshare
	Count int    // mounts, or unshares
	Lazy  bool   // umount-storm: umount2 with MNT_DETACH
	NS    string // unshare: one of UnshareNamespaces
	// Command starts the child: a re-execution of loadgen whose hidden
	// subcommand calls Serve.
	Command []string
}

// Info is the running kernel, printed next to the figures.
type Info struct {
	Release string // uname -r
	Version string // uname -v: says PREEMPT_DYNAMIC or PREEMPT_RT
	RCU     []RCUParam
}

// RCUParam is one of /sys/module/rcupdate/parameters.
type RCUParam struct {
	Name  string
	Value string // "?" when unreadable
}

// rcuParams are the parameters that choose between normal and expedited
// grace periods.
var rcuParams = []string{"rcu_expedited", "rcu_normal", "rcu_normal_after_boot"}

// ReadInfo reads uname and the rcupdate parameters.
func ReadInfo() Info {
	var k Info
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		k.Release, k.Version = unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Version[:])
	}
	for _, p := range rcuParams {
		v := "?"
		if b, err := os.ReadFile("/sys/module/rcupdate/parameters/" + p); err == nil {
			v = strings.TrimSpace(string(b))
		}
		k.RCU = append(k.RCU, RCUParam{p, v})
	}
	return k
}

// Phase is one timed loop of the child: per-call latency, wall
// time, and the CPU time the child spent (its threads, and with a fork per
// iteration its children too).
type Phase struct {
	Calls   int             `json:"calls"`
	Wall    time.Duration   `json:"wall_ns"`
	Sys     time.Duration   `json:"sys_ns"`
	User    time.Duration   `json:"user_ns"`
	Latency latency.Latency `json:"latency"`
}

// Result is what a reproduction measured.
type Result struct {
	Op     string
	Kernel Info
	Count  int
	// umount-storm
	Lazy   bool
	Dir    string // where the tmpfs were mounted, in the child's namespace
	Mount  *Phase // nil for unshare
	Umount *Phase
	Host   *HostMounts
	// unshare
	NS, Flag string
	Unshare  *Phase
	// Baseline is the same loop without the namespace flag, when each
	// iteration forks (pid): the difference is the namespace's price.
	Baseline *Phase
	// ForkPerIteration says each iteration is a clone(2) with the flag and
	// a wait, not unshare(2) (pid: unshare(CLONE_NEWPID) only affects
	// children, and a second one fails until a child has entered it).
	ForkPerIteration bool
	// Exit is the child's report to its exit having been reaped: the
	// teardown of what was left (the last namespace, the base tmpfs).
	Exit        time.Duration
	Interrupted bool
}

// HostMounts compares the host's mount table (loadgen's
// /proc/self/mountinfo) before and after the storm.
type HostMounts struct {
	Before, After int
	// Leaked are mounts of the storm's on the host: always none, unless
	// the namespace failed.
	Leaked []string
	// Others are changes the storm did not make (another program mounted
	// or unmounted meanwhile), as "+ line" or "- line".
	Others []string
}

// Unchanged reports whether the table is the same after as before.
func (h HostMounts) Unchanged() bool { return len(h.Leaked) == 0 && len(h.Others) == 0 }

// errNotRoot is the *ConfigError for a reproduction run as a user.
func errNotRoot(op string) error {
	return setting.NewError(op, "run it as root (sudo loadgen "+op+" ...)",
		"needs root: it unshares namespaces and mounts filesystems in a child process (running as uid %d)", os.Geteuid())
}

func (c Config) validate() error {
	switch {
	case c.Op != UmountStorm && c.Op != Unshare:
		return setting.NewError("Op", "use umount-storm or unshare", "unknown kernel operation %q", c.Op)
	case c.Count <= 0:
		return setting.NewError("Count", "give a positive number", "%d is not positive", c.Count)
	case c.Op == Unshare && !slices.Contains(UnshareNamespaces, c.NS):
		return setting.NewError("NS", "valid namespaces are "+strings.Join(UnshareNamespaces, ", "), "unknown namespace %q", c.NS)
	case len(c.Command) == 0:
		return setting.NewError("Command", "set it to a command that runs Serve", "a kernel reproduction needs a child command")
	case os.Geteuid() != 0:
		return errNotRoot(c.Op)
	}
	return nil
}

// Run runs a reproduction in a child process and returns what it
// measured. A *ConfigError means bad input (not root included). When ctx
// is cancelled the child is told to stop (SIGTERM) and what it measured
// is returned with Interrupted set and ctx's error.
func Run(ctx context.Context, c Config) (Result, error) {
	res := Result{Op: c.Op, Kernel: ReadInfo(), Count: c.Count, Lazy: c.Lazy, NS: c.NS,
		Flag: unshareFlagNames[c.NS], ForkPerIteration: c.NS == "pid" && c.Op == Unshare}
	if err := c.validate(); err != nil {
		return res, err
	}
	spec := kernelSpec{Op: c.Op, Count: c.Count, Lazy: c.Lazy, NS: c.NS}
	var before []string
	if c.Op == UmountStorm {
		ns, err := os.Readlink("/proc/self/ns/mnt")
		if err != nil {
			return res, err
		}
		spec.HostMntNS = ns
		if before, err = hostMountTable(); err != nil {
			return res, err
		}
	}
	if res.ForkPerIteration {
		tr, err := exec.LookPath("true")
		if err != nil {
			return res, fmt.Errorf("unshare --ns pid forks true(1) per iteration: %w", err)
		}
		spec.True = tr
	}
	rep, exit, err := runKernelChild(ctx, c.Command, spec)
	res.fill(rep, exit)
	if c.Op == UmountStorm {
		after, merr := hostMountTable()
		res.Host = compareMounts(before, after)
		err = errors.Join(err, merr)
		if len(res.Host.Leaked) > 0 {
			err = errors.Join(err, fmt.Errorf("the storm's mounts reached the host: %q", res.Host.Leaked))
		}
	}
	if ctx.Err() != nil {
		res.Interrupted = true
		err = ctx.Err()
	}
	return res, err
}

func (r *Result) fill(rep kernelReport, exit time.Duration) {
	r.Dir, r.Mount, r.Umount, r.Unshare, r.Baseline = rep.Dir, rep.Mount, rep.Umount, rep.Unshare, rep.Baseline
	r.Exit, r.Interrupted = exit, rep.Interrupted
}

// kernelSpec is what the child does.
type kernelSpec struct {
	Op        string `json:"op"`
	Count     int    `json:"count"`
	Lazy      bool   `json:"lazy,omitempty"`
	NS        string `json:"ns,omitempty"`
	HostMntNS string `json:"host_mnt_ns,omitempty"` // the parent's mnt namespace: the child must be elsewhere
	True      string `json:"true,omitempty"`        // true(1), forked per pid iteration
}

// kernelReport is what the child sends back.
type kernelReport struct {
	Dir         string `json:"dir,omitempty"`
	Mount       *Phase `json:"mount,omitempty"`
	Umount      *Phase `json:"umount,omitempty"`
	Unshare     *Phase `json:"unshare,omitempty"`
	Baseline    *Phase `json:"baseline,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	Err         string `json:"err,omitempty"`
}

// runKernelChild starts the child, sends spec, reads its report and
// waits for it; exit is the report to the child's exit.
func runKernelChild(ctx context.Context, command []string, spec kernelSpec) (rep kernelReport, exit time.Duration, err error) {
	in, err := json.Marshal(spec)
	if err != nil {
		return rep, 0, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Own process group: a terminal's Ctrl-C reaches loadgen, which stops
	// the child so that it still reports. Pdeathsig kills it with loadgen.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if spec.Op == UmountStorm || spec.NS == "mnt" {
		cmd.SysProcAttr.Unshareflags = unix.CLONE_NEWNS
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return rep, 0, err
	}
	done, err := startFromLockedThread(cmd)
	if err != nil {
		return rep, 0, fmt.Errorf("starting the %s child: %w", spec.Op, err)
	}
	defer context.AfterFunc(ctx, func() { cmd.Process.Signal(syscall.SIGTERM) })()
	line, rerr := bufio.NewReader(out).ReadBytes('\n')
	t := time.Now()
	io.Copy(io.Discard, out)
	werr := <-done
	exit = time.Since(t)
	if rerr == nil {
		rerr = json.Unmarshal(line, &rep)
	}
	switch {
	case rerr != nil:
		return rep, exit, fmt.Errorf("the %s child: %v (%v): %s", spec.Op, rerr, werr, bytes.TrimSpace(stderr.Bytes()))
	case rep.Err != "":
		return rep, exit, errors.New(rep.Err)
	case werr != nil && !rep.Interrupted:
		return rep, exit, fmt.Errorf("the %s child: %v: %s", spec.Op, werr, bytes.TrimSpace(stderr.Bytes()))
	}
	return rep, exit, nil
}

// startFromLockedThread starts cmd from a goroutine that keeps its OS thread until
// the process exits (Pdeathsig fires when the forking thread exits, and
// Go lets threads exit); the channel gets Wait's error.
func startFromLockedThread(cmd *exec.Cmd) (<-chan error, error) {
	started, done := make(chan error), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			done <- cmd.Wait()
		}
	}()
	return done, <-started
}

// hostMountTable is /proc/self/mountinfo, one line per mount, without the
// mount IDs (fields 1 and 2), which a remount would change.
func hostMountTable() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 2 {
			out = append(out, strings.Join(f[2:], " "))
		}
	}
	return out, nil
}

// compareMounts sets the storm's own mounts apart from others' changes.
func compareMounts(before, after []string) *HostMounts {
	h := &HostMounts{Before: len(before), After: len(after)}
	count := map[string]int{}
	for _, l := range before {
		count[l]++
	}
	for _, l := range after {
		count[l]--
	}
	for _, l := range after {
		if strings.Contains(l, " "+stormSource+" ") || strings.Contains(l, "/loadgen-umount-storm-") {
			h.Leaked = append(h.Leaked, l)
		}
	}
	for l, n := range count {
		for ; n > 0; n-- {
			h.Others = append(h.Others, "- "+l)
		}
		for ; n < 0; n++ {
			if !slices.Contains(h.Leaked, l) {
				h.Others = append(h.Others, "+ "+l)
			}
		}
	}
	slices.Sort(h.Others)
	return h
}
