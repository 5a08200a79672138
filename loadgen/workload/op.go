package workload

import "strings"

// Op is what each iteration of a worker's loop does.
type Op string

// The operations. Each is one timed operation unless noted.
const (
	// OpOpenReadClose opens the worker's file, reads BufSize bytes at
	// offset 0 and closes it (the original benchmark). Worker i uses file
	// i mod K of K distinct files.
	OpOpenReadClose Op = "open-read-close"
	// OpStat is stat(2) of the worker's file.
	OpStat Op = "stat"
	// OpReaddir opens the directory holding the worker's file, reads every
	// entry (getdents until the end) and closes it.
	OpReaddir Op = "readdir"
	// OpWalk is open-read-close of the worker's file reached through a deep
	// path with a symlink in it (bus/cpu/devices/cpuN/..., as udev walks).
	OpWalk Op = "walk"
	// OpSameFile is open-read-close of one file by every worker (Fox Chen's
	// original).
	OpSameFile Op = "same-file"
	// OpRandom is open-read-close of a file drawn at random each iteration
	// from a set of at least Threads files (Ian Kent's realistic mix).
	OpRandom Op = "random"
	// OpHwloc is one whole CPU topology discovery, as hwloc does it at
	// start-up: list cpu/ and node/, then read every cpuN/topology/*,
	// cpuN/cache/index*/* and nodeN/{cpulist,cpumap,distance,meminfo}, and
	// look up the names hwloc tries that are missing (cpufreq/*,
	// cache/index9, ...: ENOENT is their success). One operation is one
	// whole discovery; loadgen.Result.FilesPerOp says how many files that
	// is, and each worker's WorkerResult.Done its time to done (loadgen's
	// ops_hwloc.go).
	OpHwloc Op = "hwloc"
	// OpLstopo runs the real `lstopo --of xml --no-io` with HWLOC_FSROOT
	// pointing at the target (a path or mount, not TargetSim): one
	// operation is one lstopo process, start-up included.
	OpLstopo Op = "lstopo"
	// OpColdplug is udev coldplugging memory blocks: read online, state,
	// phys_index and valid_zones of one block and look up its missing
	// driver link, while a writer hot-adds blocks through
	// devices/system/memory/probe where the target has one. Iteration j of
	// worker i handles block (i + j x Threads) mod N (loadgen's
	// ops_coldplug.go).
	OpColdplug Op = "coldplug"
	// OpCgroup is a Kubernetes node agent (kubelet's cAdvisor,
	// systemd-oomd) reading one cgroup's figures: memory.stat, cpu.stat,
	// io.stat, cgroup.procs and memory.current of one cgroup of the cgroup
	// v2 hierarchy under fs/cgroup, whole (a page-sized read), while a
	// writer makes and removes containers' cgroups through
	// bus/kernfsim/new_cgroup and delete_cgroup where the target has them.
	// Iteration j of worker i reads cgroup (i + j x Threads) mod N, so one
	// sweep of the hierarchy is N operations shared out among the
	// workers (loadgen's ops_cgroup.go).
	OpCgroup Op = "cgroup"
)

// DefaultBufSize is the bytes an operation reads at once, as the
// original benchmark's.
const DefaultBufSize = 32

// Ops lists the operations in the order of their documentation.
var Ops = []Op{OpOpenReadClose, OpStat, OpReaddir, OpWalk, OpSameFile, OpRandom, OpHwloc, OpLstopo, OpColdplug, OpCgroup}

// OpNames is Ops, comma-separated, for hints.
func OpNames() string {
	s := make([]string, len(Ops))
	for i, o := range Ops {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}
