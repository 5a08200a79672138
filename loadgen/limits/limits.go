package limits

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/setting"
)

// runtimeThreads are the threads kept back from a thread limit for the
// Go runtime and the rest of the process (GOMAXPROCS threads, sysmon,
// threads blocked in system calls, a server's readers).
const runtimeThreads = 100

// ThreadLimit is how many worker threads (each a goroutine locked to its
// own OS thread, or a worker process) this process may start, and which
// limit sets it: the lowest of Go's debug.SetMaxThreads (10000 unless
// changed; past it the runtime dies with "thread exhaustion"), the
// kernel's /proc/sys/kernel/threads-max, RLIMIT_NPROC (not for root) and
// the cgroup's pids.max, less runtimeThreads.
func ThreadLimit() (int, string) {
	goMax := debug.SetMaxThreads(10000)
	debug.SetMaxThreads(goMax)
	n, why := goMax, "Go's thread limit (debug.SetMaxThreads)"
	lower := func(v int, name string) {
		if v > 0 && v < n {
			n, why = v, name
		}
	}
	lower(readIntFile("/proc/sys/kernel/threads-max"), "/proc/sys/kernel/threads-max")
	var rl unix.Rlimit
	if os.Geteuid() != 0 && unix.Getrlimit(unix.RLIMIT_NPROC, &rl) == nil && rl.Cur != unix.RLIM_INFINITY && rl.Cur < 1<<31 {
		lower(int(rl.Cur), "RLIMIT_NPROC (ulimit -u)")
	}
	lower(readIntFile(cgroupFile("pids.max")), "the cgroup's pids.max")
	return max(n-runtimeThreads, 1), fmt.Sprintf("%s is %d, less %d for the runtime", why, n, runtimeThreads)
}

// CheckThreads is a *ConfigError if n workers of field exceed ThreadLimit.
func CheckThreads(field string, n int) error {
	limit, why := ThreadLimit()
	if n <= limit {
		return nil
	}
	return setting.NewError(field, fmt.Sprintf("give at most %d", limit), "%d threads is more than this process may start (%s)", n, why)
}

// cgroupFile is name (say pids.max) in this process's cgroup, or "".
func cgroupFile(name string) string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	return cgroupPath(string(b), name)
}

// cgroupPath is name in the cgroup that procCgroup (/proc/self/cgroup's
// contents) gives: under the v1 hierarchy of its controller (the part of
// name before the dot) if there is one, else under v2's; "" if neither.
func cgroupPath(procCgroup, name string) string {
	ctrl, _, _ := strings.Cut(name, ".")
	v2 := ""
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case parts[1] == ctrl:
			return filepath.Join("/sys/fs/cgroup", ctrl, parts[2], name)
		case parts[0] == "0" && parts[1] == "":
			v2 = filepath.Join("/sys/fs/cgroup", parts[2], name)
		}
	}
	return v2
}

// readIntFile is the integer in path, or 0 (also for "max").
func readIntFile(path string) int {
	if path == "" {
		return 0
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// AllowedCPUs returns the CPUs this process may run on, in order.
func AllowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		cpus := make([]int, runtime.NumCPU())
		for i := range cpus {
			cpus[i] = i
		}
		return cpus
	}
	var cpus []int
	for i := 0; len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}
