package loadgen

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// A Kubernetes node agent reading cgroup v2 while containers start and
// stop: the biggest user of kernfs on most servers. kubelet's cAdvisor
// (and systemd-oomd, and every metrics exporter) reads each cgroup's
// memory.stat, cpu.stat, io.stat, cgroup.procs and memory.current on a
// timer, while the container runtime makes a cgroup when a container
// starts and removes it when it stops (cgroup_mkdir and cgroup_rmdir:
// kernfs_create_dir and kernfs_remove, under kernfs's rwsem taken for
// writing).
//
// One OpCgroup operation is one cgroup's files, each read whole (a
// page). Iteration j of worker i reads cgroup (i + j x Threads) mod N of
// the N cgroups below fs/cgroup (depth first, the root left out, as the
// agents read it from /proc), so that the concur phase's workers share a
// sweep of the hierarchy out, each cgroup once, as cAdvisor's per-cgroup
// housekeeping does. Meanwhile writers (one, or Config.Writers) make and
// remove containers' cgroups through bus/kernfsim/new_cgroup and
// delete_cgroup where the target has them (a kernfsim tree with a cgroup
// hierarchy: sysfs.SynthConfig.Cgroups).

const (
	cgroupDir = client.CgroupDir
	// CgroupPage is an OpCgroup read: a page, as seq_file fills it and
	// the agents' readers ask for it, so that memory.stat comes whole.
	CgroupPage = 4096
	// cgroupMark is in the name of every cgroup loadgen's writers make;
	// the readers leave those out.
	cgroupMark = "loadgen"
	// maxCgroups bounds the cgroups a plan looks at.
	maxCgroups = 100_000
)

// cgroupReads are the files one operation reads in each cgroup; those the
// first cgroup lacks are left out.
var cgroupReads = []string{"memory.stat", "cpu.stat", "io.stat", "cgroup.procs", "memory.current"}

// CgroupFiles is the reads of one operation.
const CgroupFiles = 5

// setCgroup fills p with the cgroups and files of a cgroup run: the
// cgroups below fs/cgroup holding every file the first one has.
func (p *plan) setCgroup(t target, c Config) error {
	if err := t.stat(t.abs(cgroupDir + "/cgroup.controllers")); err != nil {
		return setting.NewError("Op", "give the tree cgroups ({Tree.Cgroups} N) or measure a sysfs whose fs/cgroup is cgroup v2",
			"cgroup needs a cgroup v2 hierarchy at %s, and %s/cgroup.controllers is not there (%v)", t.abs(cgroupDir), t.abs(cgroupDir), err)
	}
	cgs := listCgroups(t)
	if len(cgs) == 0 {
		return setting.NewError("Op", "give the tree cgroups ({Tree.Cgroups} N)", "%s has no cgroup below its root", t.abs(cgroupDir))
	}
	first := cgroupDir + "/" + cgs[0] + "/"
	read, _, err := classify(t, prefixed(first, cgroupReads), make([]byte, CgroupPage))
	switch {
	case err != nil:
		return err
	case len(read) == 0:
		return setting.NewError("Op", "measure a cgroup v2 hierarchy with the memory, cpu and io controllers",
			"%s: none of %s is readable", t.abs(first), strings.Join(cgroupReads, ", "))
	}
	for _, r := range read {
		p.CgroupFiles = append(p.CgroupFiles, strings.TrimPrefix(r, first))
	}
	for _, cg := range cgs {
		paths := prefixed(t.abs(cgroupDir+"/"+cg)+"/", p.CgroupFiles)
		if allExist(t, paths) {
			p.Cgroups, p.CgroupPaths = append(p.Cgroups, cg), append(p.CgroupPaths, paths...)
		}
	}
	p.Stride, p.Names = c.Threads, read
	return nil
}

// listCgroups is every cgroup below fs/cgroup but loadgen's writers',
// depth first in name order, relative to fs/cgroup.
func listCgroups(t target) []string {
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		ents, _ := t.list(strings.TrimSuffix(cgroupDir+"/"+rel, "/"))
		for _, e := range ents {
			if !e.dir || strings.Contains(e.name, cgroupMark) || len(out) >= maxCgroups {
				continue
			}
			cg := strings.TrimPrefix(rel+"/"+e.name, "/")
			out = append(out, cg)
			walk(cg)
		}
	}
	walk("")
	return out
}

// cgroupV2 reports whether the sysfs at dir has a cgroup v2 hierarchy at
// fs/cgroup.
func cgroupV2(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, cgroupDir, "cgroup.controllers"))
	return err == nil
}

func allExist(t target, paths []string) bool {
	for _, p := range paths {
		if t.stat(p) != nil {
			return false
		}
	}
	return true
}

// cgroupRead is one OpCgroup operation: the next cgroup's files. It goes
// on past a failure and returns the first, as a *fs.PathError naming the
// file.
func (w *worker) cgroupRead() error {
	p := w.p
	k := len(p.CgroupFiles)
	paths := p.CgroupPaths[w.cursor*k : (w.cursor+1)*k]
	w.cursor = (w.cursor + p.Stride) % len(p.Cgroups)
	var first error
	for _, f := range paths {
		if err := w.t.readFile(f, w.buf); err != nil && first == nil {
			first = &fs.PathError{Op: "read", Path: f, Err: err}
		}
	}
	return first
}

// cgroupChurn is OpCgroup's changer: containers starting and stopping.
// Writer w has a pod of its own, kubepods.slice/kubepods-podloadgenW.slice
// (a Guaranteed pod's place), made before the run and removed after it,
// untimed; it cycles through churnSlots containers in it, each change
// making the slot's cri-containerd-loadgenWxI.scope if it is absent (a
// start), else removing it (a stop).
type cgroupChurn struct {
	t       target
	pods    []string   // per writer, below fs/cgroup; immutable
	scopes  [][]string // per writer, its slots' cgroups; immutable
	present [][]bool   // row w is writer w's (cleanup's once the writers stopped)
	next    []int      // per writer, its next slot; as present
}

// newCgroupChurn returns the writers of a cgroup run on t, or nil and a
// note saying why there are none. Writers asked for (Config.Churn or
// Config.Writers) that cannot write are bad input.
func newCgroupChurn(t target, c Config) (*writerSet, string, error) {
	why := cgroupWritable(t, c)
	if why == "" {
		ch, err := makeCgroupChurn(t, c.writers())
		if err == nil {
			return newWriterSet(ch, c.writers(), c.writeRate()), "", nil
		}
		why = err.Error()
	}
	if c.explicitWriters() {
		return nil, "", setting.NewError(c.writersField(), "churn the cgroups of a kernfsim tree ({TargetSim} or a kernfsim mount; {Tree.Cgroups} N)", "%s", why)
	}
	return nil, "no cgroup churn: " + why + "; readers only", nil
}

// cgroupWritable says why t's cgroups cannot be churned ("" if they can).
func cgroupWritable(t target, c Config) string {
	if c.Target.Kind != targets.TargetPath && !targets.AcceptsWriters(c.Target.Lock) {
		return "lock strategy " + c.Target.Lock + " refuses writers"
	}
	if err := t.stat(t.abs(client.NewCgroupPath)); err != nil {
		return fmt.Sprintf("no %s (%s): not a kernfsim tree with a cgroup hierarchy (loadgen never makes cgroups on a real machine)",
			t.abs(client.NewCgroupPath), kernfsim.ErrnoName(kernfsim.Errno(err)))
	}
	return ""
}

// makeCgroupChurn makes each writer's pod, after removing what a previous
// run may have left (ENOENT when absent, as expected).
func makeCgroupChurn(t target, writers int) (*cgroupChurn, error) {
	c := &cgroupChurn{t: t, next: make([]int, writers)}
	for w := range writers {
		pod := "kubepods.slice/kubepods-pod" + cgroupMark + itoa(w) + ".slice"
		scopes := make([]string, churnSlots)
		for i := range scopes {
			scopes[i] = pod + "/cri-containerd-" + cgroupMark + itoa(w) + "x" + itoa(i) + ".scope"
			t.write(client.DeleteCgroupPath, client.DeleteCgroupLine(scopes[i]))
		}
		t.write(client.DeleteCgroupPath, client.DeleteCgroupLine(pod))
		if err := t.write(client.NewCgroupPath, client.NewCgroupLine(pod)); err != nil {
			c.cleanup()
			return nil, fmt.Errorf("making the writers' pod %s: %v", pod, err)
		}
		c.pods, c.scopes, c.present = append(c.pods, pod), append(c.scopes, scopes), append(c.present, make([]bool, churnSlots))
	}
	return c, nil
}

func (c *cgroupChurn) change(w int) (bool, string, error) {
	i := c.next[w] % churnSlots
	c.next[w]++
	path, removed := c.scopes[w][i], c.present[w][i]
	var err error
	if removed {
		err = c.t.write(client.DeleteCgroupPath, client.DeleteCgroupLine(path))
	} else {
		err = c.t.write(client.NewCgroupPath, client.NewCgroupLine(path))
	}
	if err == nil {
		c.present[w][i] = !removed
	}
	return removed, cgroupDir + "/" + path, err
}

// cleanup removes the containers the writers left, then their pods.
func (c *cgroupChurn) cleanup() {
	for w, pod := range c.pods {
		for i, s := range c.scopes[w] {
			if c.present[w][i] {
				c.t.write(client.DeleteCgroupPath, client.DeleteCgroupLine(s))
			}
		}
		c.t.write(client.DeleteCgroupPath, client.DeleteCgroupLine(pod))
	}
}
