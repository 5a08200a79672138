package loadgen

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

const (
	cpuDir  = "devices/system/cpu"
	nodeDir = "devices/system/node"
	// maxScan bounds the files a fallback scan of a non-sysfs directory
	// looks at.
	maxScan = 10000
)

// plan is what the workers of a run do, resolved once at set-up. It is
// read-only while workers run. Paths are in the target's abs form; Names
// are the same paths relative to the target, for the report.
type plan struct {
	Op      workload.Op `json:"op"`
	Missing string      `json:"missing,omitempty"` // the missing path, when Config.Missing
	Files   []string    `json:"files,omitempty"`   // K files: worker i uses Files[i mod K]
	Dirs    []string    `json:"dirs,omitempty"`    // OpReaddir: Dirs[i mod K]; OpHwloc: listed per discovery
	Set     []string    `json:"set,omitempty"`     // OpRandom: drawn from; OpHwloc: read per discovery
	Churn   []string    `json:"churn,omitempty"`   // churned devices' files, read every fourth iteration
	// OpHwloc: missing names looked up per discovery (ENOENT expected).
	Probes []string `json:"probes,omitempty"`
	// OpLstopo: the lstopo binary and its HWLOC_FSROOT.
	Lstopo string `json:"lstopo,omitempty"`
	Root   string `json:"root,omitempty"`
	// OpColdplug: the memory directory, its blocks' names (memoryN), the
	// attributes read and the missing name looked up in each, and the
	// stride between a worker's blocks (the run's threads).
	MemDir string   `json:"mem_dir,omitempty"`
	Blocks []string `json:"blocks,omitempty"`
	Attrs  []string `json:"attrs,omitempty"`
	Absent string   `json:"absent,omitempty"`
	Stride int      `json:"stride,omitempty"` // and OpCgroup's
	// OpCgroup: the cgroups (below fs/cgroup), the files read in each,
	// and every cgroup's files' paths, cgroup after cgroup.
	Cgroups     []string `json:"cgroups,omitempty"`
	CgroupFiles []string `json:"cgroup_files,omitempty"`
	CgroupPaths []string `json:"cgroup_paths,omitempty"`
	Names       []string `json:"-"`
}

// makePlan chooses the files for c against t, checking that each can be
// read (or stat'ed, or listed) by the workers.
func makePlan(t target, c Config) (*plan, error) {
	p := &plan{Op: c.Op}
	switch {
	case c.Missing:
		return p, p.setMissing(t, c)
	case c.Op == workload.OpHwloc:
		return p, p.setHwloc(t, c)
	case c.Op == workload.OpLstopo:
		return p, p.setLstopo(t, c)
	case c.Op == workload.OpColdplug:
		return p, p.setColdplug(t, c)
	case c.Op == workload.OpCgroup:
		return p, p.setCgroup(t, c)
	}
	rels, err := chooseFiles(t, c)
	if err != nil {
		return nil, err
	}
	p.Names = rels
	switch c.Op {
	case workload.OpReaddir:
		p.Names = mapSlice(rels, path.Dir)
		p.Dirs = mapAbs(t, p.Names)
	case workload.OpWalk:
		p.Names = mapSlice(rels, func(r string) string { return deepPath(t, r) })
		p.Files = mapAbs(t, p.Names)
	case workload.OpRandom:
		p.Set = mapAbs(t, rels)
	default:
		p.Files = mapAbs(t, rels)
	}
	return p, nil
}

func mapSlice(s []string, fn func(string) string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fn(v)
	}
	return out
}

func mapAbs(t target, rels []string) []string { return mapSlice(rels, t.abs) }

// setMissing checks that the missing path is missing.
func (p *plan) setMissing(t target, c Config) error {
	p.Missing, p.Names = t.abs(c.MissingPath), []string{c.MissingPath}
	var err error
	if c.Op == workload.OpStat {
		err = t.stat(p.Missing)
	} else {
		err = t.readFile(p.Missing, make([]byte, c.BufSize))
	}
	switch e := kernfsim.Errno(err); {
	case err == nil:
		return setting.NewError("MissingPath", "choose a path that does not exist", "%s exists", c.MissingPath)
	case kernfsim.Disconnected(err):
		return workload.DeadMountError(t.abs(""))
	case e != syscall.ENOENT:
		return setting.NewError("MissingPath", "choose a path whose lookup fails with ENOENT", "%s: %v", c.MissingPath, err)
	}
	return nil
}

// chooseFiles returns the files the run uses: Config.FileList as given, or
// chosen from the target's candidates, each checked.
func chooseFiles(t target, c Config) ([]string, error) {
	want := c.Files
	switch c.Op {
	case workload.OpRandom:
		want = max(c.Threads, c.Files)
	case workload.OpSameFile:
		want = 1
	}
	if len(c.FileList) > 0 {
		return checkListed(t, c, c.FileList[:min(want, len(c.FileList))])
	}
	got, err := firstUsable(t, c, candidates(t), want)
	if err != nil {
		return nil, err
	}
	if len(got) < want && !(c.Op == workload.OpRandom && len(got) >= c.Files) {
		return nil, setting.NewError("Files", "ask for fewer ({Files} N) or name them ({FileList} PATH)",
			"%d distinct readable files wanted, only %d found under %s", want, len(got), t.abs(""))
	}
	return got, nil
}

// checkListed checks each listed file; the first that fails is bad input.
func checkListed(t target, c Config, files []string) ([]string, error) {
	buf := make([]byte, max(c.BufSize, 8192))
	for _, f := range files {
		if err := probe(t, c.Op, f, buf); err != nil {
			if kernfsim.Disconnected(err) {
				return nil, workload.DeadMountError(t.abs(""))
			}
			return nil, setting.NewError("FileList", "name files the workers can read", "%s: %v", f, err)
		}
	}
	return files, nil
}

// probe does op once on rel.
func probe(t target, op workload.Op, rel string, buf []byte) error {
	switch op {
	case workload.OpStat:
		return t.stat(t.abs(rel))
	case workload.OpReaddir:
		return t.readDir(t.abs(path.Dir(rel)), buf)
	case workload.OpWalk:
		return t.readFile(t.abs(deepPath(t, rel)), buf)
	}
	return t.readFile(t.abs(rel), buf)
}

// firstUsable returns up to want of the candidates that op works on.
func firstUsable(t target, c Config, cands func(yield func(string) bool), want int) ([]string, error) {
	buf := make([]byte, max(c.BufSize, 8192))
	var got []string
	var dead bool
	cands(func(rel string) bool {
		err := probe(t, c.Op, rel, buf)
		dead = kernfsim.Disconnected(err)
		if err == nil {
			got = append(got, rel)
		}
		return len(got) < want && !dead
	})
	if dead {
		return nil, workload.DeadMountError(t.abs(""))
	}
	return got, nil
}

// deepPath is rel reached through the cpu bus's symlink when it is a CPU's
// file and that path resolves: bus/cpu/devices/cpuN/... instead of
// devices/system/cpu/cpuN/..., as udev and hwloc walk it.
func deepPath(t target, rel string) string {
	rest, ok := strings.CutPrefix(rel, cpuDir+"/")
	if !ok {
		return rel
	}
	deep := "bus/cpu/devices/" + rest
	if t.stat(t.abs(deep)) != nil {
		return rel
	}
	return deep
}

// candidates yields the readable-looking leaf files of a sysfs in the
// order the original runs used them: every cpuN/topology/core_id, then
// the other topology files CPU by CPU, then cache and NUMA node files. A
// directory without devices/system/cpu (tmpfs, say) yields its regular
// files in breadth-first name order instead.
func candidates(t target) func(yield func(string) bool) {
	cpus := cpuNames(t)
	if len(cpus) == 0 {
		return scanFiles(t)
	}
	return func(yield func(string) bool) {
		topo := topologyNames(t, cpus[0])
		for _, name := range append([]string{"core_id"}, topo...) {
			for _, cpu := range cpus {
				if !yield(cpuDir + "/" + cpu + "/topology/" + name) {
					return
				}
			}
		}
		for _, f := range cacheAndNodeFiles(t, cpus) {
			if !yield(f) {
				return
			}
		}
	}
}

// cpuNames lists cpuN under devices/system/cpu in numeric order.
func cpuNames(t target) []string {
	ents, _ := t.list(cpuDir)
	var cpus []string
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.name, "cpu"); ok && e.dir && isNumber(n) {
			cpus = append(cpus, e.name)
		}
	}
	slices.SortFunc(cpus, func(a, b string) int { return numOf(a, "cpu") - numOf(b, "cpu") })
	return cpus
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && s != "" && s[0] != '-' && s[0] != '+'
}

func numOf(name, prefix string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, prefix))
	return n
}

// topologyNames lists the files of cpu's topology directory but core_id.
func topologyNames(t target, cpu string) []string {
	ents, _ := t.list(cpuDir + "/" + cpu + "/topology")
	var names []string
	for _, e := range ents {
		if e.file && e.name != "core_id" {
			names = append(names, e.name)
		}
	}
	return names
}

// cacheAndNodeFiles lists every cpuN/cache/index*/* file and every
// nodeN/cpulist.
func cacheAndNodeFiles(t target, cpus []string) []string {
	var files []string
	for _, cpu := range cpus {
		cache := cpuDir + "/" + cpu + "/cache"
		idx, _ := t.list(cache)
		for _, ix := range idx {
			if ix.dir && strings.HasPrefix(ix.name, "index") {
				files = appendFiles(t, files, cache+"/"+ix.name)
			}
		}
	}
	nodes, _ := t.list(nodeDir)
	for _, n := range nodes {
		if rest, ok := strings.CutPrefix(n.name, "node"); ok && n.dir && isNumber(rest) {
			files = append(files, nodeDir+"/"+n.name+"/cpulist")
		}
	}
	return files
}

// appendFiles appends dir's regular files to files.
func appendFiles(t target, files []string, dir string) []string {
	ents, _ := t.list(dir)
	for _, e := range ents {
		if e.file {
			files = append(files, dir+"/"+e.name)
		}
	}
	return files
}

// scanFiles yields the regular files under the root, breadth first,
// looking at no more than maxScan entries.
func scanFiles(t target) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		queue, seen := []string{""}, 0
		for len(queue) > 0 && seen < maxScan {
			dir := queue[0]
			queue = queue[1:]
			ents, _ := t.list(dir)
			for _, e := range ents {
				seen++
				p := path.Join(dir, e.name)
				if e.dir {
					queue = append(queue, p)
				} else if e.file && !yield(p) {
					return
				}
			}
		}
	}
}

// filesPerOp is how many files one operation reads or looks up.
func (p *plan) filesPerOp() int {
	switch p.Op {
	case workload.OpHwloc:
		return len(p.Dirs) + len(p.Set) + len(p.Probes)
	case workload.OpColdplug:
		return len(p.Attrs) + 1
	case workload.OpCgroup:
		return len(p.CgroupFiles)
	}
	return 1
}

// warmWorkers is how many of n workers' first operations warm the target
// up: one whole discovery reads every file already.
func (p *plan) warmWorkers(n int) int {
	if p.Op == workload.OpHwloc || p.Op == workload.OpLstopo {
		return 1
	}
	return n
}
