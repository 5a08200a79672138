package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// hwloc's Linux discovery, replayed. hwloc 2.x (topology-linux.c) walks
// sysfs at hwloc_topology_load, which every MPI rank (openpmix, charm++,
// Open MPI) does at start-up: all ranks at once, each reading the same
// few hundred files. The replay reads what `strace lstopo --no-io` shows
// hwloc 2.9 reading here, in the same groups:
//
//   - devices/system/cpu/{online,possible}, devices/system/node/{online,possible};
//   - per CPU: every topology/* file, every cache/index*/* file, and the
//     per-CPU names it tries: cpufreq/cpuinfo_max_freq,
//     cpufreq/base_frequency, cpu_capacity;
//   - per CPU, cache/indexK/shared_cpu_map for every K up to 9 the CPU
//     lacks (hwloc tries index0..index9);
//   - per NUMA node: cpulist, cpumap, distance, meminfo, and the
//     access0/initiators/* performance attributes of HMAT machines;
//
// plus a listing of devices/system/cpu and devices/system/node. Each name
// is tried once at set-up: a file that reads is read every discovery, a
// name that fails ENOENT is looked up every discovery (ENOENT is its
// success: that is the missing-name lookup hwloc pays for), and a name
// failing otherwise (a directory, EACCES) is left out, as hwloc would
// read nothing there either.

// hwlocCacheIndexes is how many cache/indexK directories hwloc tries.
const hwlocCacheIndexes = 10

var (
	hwlocGlobal    = []string{cpuDir + "/online", cpuDir + "/possible", nodeDir + "/online", nodeDir + "/possible"}
	hwlocCPUNames  = []string{"cpufreq/cpuinfo_max_freq", "cpufreq/base_frequency", "cpu_capacity"}
	hwlocNodeNames = []string{"cpulist", "cpumap", "distance", "meminfo", "access0/initiators/read_bandwidth",
		"access0/initiators/write_bandwidth", "access0/initiators/read_latency", "access0/initiators/write_latency"}
)

// setHwloc fills p with one discovery of t: Dirs listed, Set read, Probes
// looked up (missing). Names are Set then Probes, relative to the target.
func (p *plan) setHwloc(t target, c Config) error {
	cpus := cpuNames(t)
	if len(cpus) == 0 {
		return setting.NewError("Op", "measure a sysfs (a kernfsim mount, /sys or {TargetSim})",
			"%s needs %s/cpuN directories, and %s has none", c.Op, cpuDir, t.abs(""))
	}
	read, missing, err := classify(t, hwlocNames(t, cpus), make([]byte, max(c.BufSize, 8192)))
	if err != nil {
		return err
	}
	p.Dirs = mapAbs(t, []string{cpuDir, nodeDir})
	p.Set, p.Probes = mapAbs(t, read), mapAbs(t, missing)
	p.Names = append(read, missing...)
	return nil
}

// hwlocNames are the names one discovery tries, relative to the target.
func hwlocNames(t target, cpus []string) []string {
	names := append([]string{}, hwlocGlobal...)
	for _, cpu := range cpus {
		d := cpuDir + "/" + cpu
		names = appendFiles(t, names, d+"/topology")
		present := map[string]bool{}
		idx, _ := t.list(d + "/cache")
		for _, ix := range idx {
			if ix.dir && strings.HasPrefix(ix.name, "index") {
				names = appendFiles(t, names, d+"/cache/"+ix.name)
				present[ix.name] = true
			}
		}
		for k := range hwlocCacheIndexes {
			if ix := "index" + strconv.Itoa(k); !present[ix] {
				names = append(names, d+"/cache/"+ix+"/shared_cpu_map")
			}
		}
		for _, n := range hwlocCPUNames {
			names = append(names, d+"/"+n)
		}
	}
	nodes, _ := t.list(nodeDir)
	for _, n := range nodes {
		if rest, ok := strings.CutPrefix(n.name, "node"); ok && n.dir && isNumber(rest) {
			for _, f := range hwlocNodeNames {
				names = append(names, nodeDir+"/"+n.name+"/"+f)
			}
		}
	}
	return names
}

// classify tries each name once: read are those that read, missing those
// that fail ENOENT; the rest are left out. A dead mount is bad input.
func classify(t target, names []string, buf []byte) (read, missing []string, err error) {
	for _, n := range names {
		switch err := t.readFile(t.abs(n), buf); {
		case err == nil:
			read = append(read, n)
		case kernfsim.Errno(err) == syscall.ENOENT:
			missing = append(missing, n)
		case kernfsim.Disconnected(err):
			return nil, nil, workload.DeadMountError(t.abs(""))
		}
	}
	return read, missing, nil
}

// discover is one hwloc topology discovery; it goes on past a failure
// and returns the first, as a *fs.PathError naming the file.
func (w *worker) discover() error {
	var first error
	note := func(path string, err error) {
		if err != nil && first == nil {
			first = &fs.PathError{Op: "read", Path: path, Err: err}
		}
	}
	for _, d := range w.p.Dirs {
		note(d, w.t.readDir(d, w.dbuf))
	}
	for _, f := range w.p.Set {
		note(f, w.t.readFile(f, w.buf))
	}
	for _, f := range w.p.Probes {
		if err := w.t.readFile(f, w.buf); err != nil && kernfsim.Errno(err) != syscall.ENOENT {
			note(f, err)
		}
	}
	return first
}

// lstopoArgs run a discovery without I/O devices, as an MPI library's
// hwloc_topology_load does by default, and print it as XML.
var lstopoArgs = []string{"--of", "xml", "--no-io", "-"}

// setLstopo makes the HWLOC_FSROOT directory of an OpLstopo run: ROOT/sys,
// a symlink to the target, and ROOT/proc/cpuinfo, a copy of this host's
// when the target has as many CPUs as it lists (otherwise none: hwloc then
// only lacks the processor model). It runs lstopo once to check it works.
func (p *plan) setLstopo(t target, c Config) error {
	bin, err := exec.LookPath("lstopo")
	if err != nil {
		return setting.NewError("Op", "install hwloc (Debian: apt-get install hwloc)", "lstopo not found: %v", err)
	}
	cpus := cpuNames(t)
	if len(cpus) == 0 {
		return setting.NewError("Op", "measure a sysfs (a kernfsim mount or /sys)",
			"lstopo needs %s/cpuN directories, and %s has none", cpuDir, t.abs(""))
	}
	root, err := os.MkdirTemp("", "loadgen-hwloc-root-")
	if err != nil {
		return err
	}
	p.Root, p.Lstopo, p.Names = root, bin, []string{"lstopo " + strings.Join(lstopoArgs, " ")}
	if err := makeFSRoot(root, t.abs(""), len(cpus)); err != nil {
		return err
	}
	if err := runLstopo(bin, root); err != nil {
		return setting.NewError("Op", "check that hwloc reads the target", "%v", err)
	}
	return nil
}

// makeFSRoot fills root for HWLOC_FSROOT: sys pointing at dir, and
// proc/cpuinfo when this host's has ncpus processors.
func makeFSRoot(root, dir string, ncpus int) error {
	if err := os.Symlink(dir, filepath.Join(root, "sys")); err != nil {
		return err
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || bytes.Count(info, []byte("\nprocessor\t")) != ncpus-1 || !bytes.HasPrefix(info, []byte("processor\t")) {
		return nil
	}
	if err := os.Mkdir(filepath.Join(root, "proc"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "proc", "cpuinfo"), info, 0o644)
}

// runLstopo runs lstopo once on root, its output discarded.
func runLstopo(bin, root string) error {
	cmd := exec.Command(bin, lstopoArgs...)
	cmd.Env = append(os.Environ(), "HWLOC_FSROOT="+root, "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("HWLOC_FSROOT=%s lstopo: %w: %s", root, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// lstopo is one OpLstopo operation: a whole lstopo process. A failure is
// an EIO on the root.
func (w *worker) lstopo() error {
	if err := runLstopo(w.p.Lstopo, w.p.Root); err != nil {
		return &fs.PathError{Op: "lstopo", Path: w.p.Root, Err: errors.Join(syscall.EIO, err)}
	}
	return nil
}

// close removes what the plan made on disk: OpLstopo's root (RemoveAll
// does not follow its sys symlink into the target).
func (p *plan) close() error {
	if p == nil || p.Root == "" {
		return nil
	}
	return os.RemoveAll(p.Root)
}
