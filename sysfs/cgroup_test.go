package sysfs

import (
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/internal/testkit/testtree"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// cgroupTree assembles a small synthetic tree with n containers' cgroups
// and the in-tree ABI under lock.
func cgroupTree(t *testing.T, lock string, n int) (*Assembled, *kernfsim.Walker) {
	t.Helper()
	c := SynthConfig{CPUs: 4, Sockets: 1, MemBlocks: 1, Netdevs: 0, Disks: 2, Cgroups: n}.WithDefaults()
	a := testkit.Must(Assemble(Options{Lock: lock, Grace: testtree.FastGrace, Synth: c, ABI: true}))(t)
	if g := a.Tree.Strategy().Grace(); g != nil {
		t.Cleanup(g.Barrier)
	}
	return a, kernfsim.NewWalker(a.Tree, kernfsim.WalkerOptions{})
}

// cgroupsBelow lists every cgroup below fs/cgroup, depth first in name
// order, relative to it.
func cgroupsBelow(t *testing.T, tr *kernfsim.Tree) []string {
	t.Helper()
	var out []string
	synthWalk(t, tr, testkit.Must(lookupPath(tr, "fs/cgroup"))(t), "", func(p string, n *kernfsim.Node) {
		if n.Kind() == kernfsim.KindDir {
			out = append(out, p)
		}
	})
	return out
}

// The hierarchy: 5 containers in 3 pods, 2 burstable and 1 besteffort,
// each cgroup with every interface file; the root with its own.
func TestCgroupLayout(t *testing.T) {
	a, w := cgroupTree(t, "rwsem", 5)
	cgs := cgroupsBelow(t, a.Tree)
	var pods, containers []string
	for _, p := range cgs {
		switch base := p[strings.LastIndexByte(p, '/')+1:]; {
		case strings.HasPrefix(base, "cri-containerd-") && strings.HasSuffix(base, ".scope") && len(base) == len("cri-containerd-.scope")+64:
			containers = append(containers, p)
		case strings.Contains(base, "-pod") && strings.HasSuffix(base, ".slice"):
			pods = append(pods, p)
		}
	}
	if len(cgs) != 3+3+5 || len(pods) != 3 || len(containers) != 5 {
		t.Fatalf("cgroups %q: want kubepods.slice, 2 QoS slices, 3 pods and 5 containers", cgs)
	}
	if !strings.HasPrefix(containers[0], "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod") ||
		!strings.HasPrefix(pods[1], "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod") {
		t.Errorf("containers %q, pods %q: want systemd's slice names", containers, pods)
	}
	for _, p := range cgs {
		var files []string
		a.Tree.Readdir(testkit.Must(lookupPath(a.Tree, "fs/cgroup/"+p))(t), 0, func(d kernfsim.Dirent) bool {
			if d.Kind == kernfsim.KindAttr {
				files = append(files, d.Name)
			}
			return true
		})
		if len(files) != len(cgroupFiles) {
			t.Errorf("%s: %d files, want %d", p, len(files), len(cgroupFiles))
		}
	}
	if got := synthRead(t, w, "fs/cgroup/cgroup.controllers"); got != "cpuset cpu io memory hugetlb pids\n" {
		t.Errorf("root cgroup.controllers %q", got)
	}
	if got := synthRead(t, w, "fs/cgroup/cgroup.stat"); got != "nr_descendants 11\nnr_dying_descendants 0\n" {
		t.Errorf("root cgroup.stat %q, want 11 descendants", got)
	}
	root := testkit.Must(client.ParseFlatKeyed([]byte(synthRead(t, w, "fs/cgroup/cpu.stat"))))(t)
	if len(root) != 3 {
		t.Errorf("root cpu.stat %v: want usage, user and system only", root)
	}
}

// Every cgroup's stat files parse back in the kernel's formats, with
// figures that agree; pids are distinct across the hierarchy.
func TestCgroupFormats(t *testing.T) {
	a, w := cgroupTree(t, "rcu", 4)
	pids := map[uint64]string{}
	for _, p := range cgroupsBelow(t, a.Tree) {
		dir := "fs/cgroup/" + p + "/"
		mem := testkit.Must(client.ParseFlatKeyed([]byte(synthRead(t, w, dir+"memory.stat"))))(t)
		checkMemoryStat(t, p, mem, synthRead(t, w, dir+"memory.current"))
		checkCPUStat(t, p, testkit.Must(client.ParseFlatKeyed([]byte(synthRead(t, w, dir+"cpu.stat"))))(t))
		checkIOStat(t, p, testkit.Must(client.ParseNestedKeyed([]byte(synthRead(t, w, dir+"io.stat"))))(t))
		if a, b := synthRead(t, w, dir+"memory.stat"), synthRead(t, w, dir+"memory.stat"); a != b {
			t.Errorf("%s: memory.stat changed between reads", p)
		}
		procs := testkit.Must(client.ParseValues([]byte(synthRead(t, w, dir+"cgroup.procs"))))(t)
		if strings.HasSuffix(p, ".scope") != (len(procs) > 0) {
			t.Errorf("%s: pids %v: want some in a container only", p, procs)
		}
		for _, pid := range procs {
			if other, dup := pids[pid]; dup {
				t.Errorf("pid %d in %s and %s", pid, p, other)
			}
			pids[pid] = p
		}
	}
	if len(pids) == 0 {
		t.Fatal("no processes in any cgroup")
	}
}

func checkMemoryStat(t *testing.T, p string, mem []client.KeyValue, current string) {
	t.Helper()
	keys := make([]string, len(mem))
	for i, kv := range mem {
		keys[i] = kv.Key
	}
	if !slices.Equal(keys, memoryStatKeys[:]) {
		t.Fatalf("%s: memory.stat keys %q, want %q", p, keys, memoryStatKeys)
	}
	v := func(k string) uint64 { n, _ := client.Get(mem, k); return n }
	cur := testkit.Must(client.ParseValues([]byte(current)))(t)
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"memory.current", cur[0], v("anon") + v("file") + v("kernel") + v("sock")},
		{"kernel", v("kernel"), v("kernel_stack") + v("pagetables") + v("sec_pagetables") + v("percpu") + v("slab") + v("vmalloc")},
		{"slab", v("slab"), v("slab_reclaimable") + v("slab_unreclaimable")},
		{"anon LRU", v("inactive_anon") + v("active_anon"), v("anon") + v("shmem")},
		{"file LRU", v("inactive_file") + v("active_file"), v("file") - v("shmem")},
		{"pgscan", v("pgscan"), v("pgscan_kswapd") + v("pgscan_direct") + v("pgscan_khugepaged")},
		{"pgsteal", v("pgsteal"), v("pgsteal_kswapd") + v("pgsteal_direct") + v("pgsteal_khugepaged")},
		{"anon pages", v("anon") % pageSize, 0},
	} {
		if c.got != c.want || len(cur) != 1 {
			t.Errorf("%s: %s %d, want %d", p, c.what, c.got, c.want)
		}
	}
	if v("file_mapped") > v("file") || v("anon_thp") > v("anon") {
		t.Errorf("%s: file_mapped %d of file %d, anon_thp %d of anon %d", p, v("file_mapped"), v("file"), v("anon_thp"), v("anon"))
	}
}

func checkCPUStat(t *testing.T, p string, cpu []client.KeyValue) {
	t.Helper()
	want := []string{"usage_usec", "user_usec", "system_usec", "nr_periods", "nr_throttled", "throttled_usec", "nr_bursts", "burst_usec"}
	var keys []string
	for _, kv := range cpu {
		keys = append(keys, kv.Key)
	}
	v := func(k string) uint64 { n, _ := client.Get(cpu, k); return n }
	if !slices.Equal(keys, want) || v("usage_usec") != v("user_usec")+v("system_usec") || v("nr_throttled") > v("nr_periods") {
		t.Errorf("%s: cpu.stat %v", p, cpu)
	}
}

func checkIOStat(t *testing.T, p string, io []client.NestedKeyed) {
	t.Helper()
	want := []string{"rbytes", "wbytes", "rios", "wios", "dbytes", "dios"}
	if len(io) != 2 || io[0].Key != "259:0" || io[1].Key != "259:1" {
		t.Fatalf("%s: io.stat %v: want a line for each of 259:0 and 259:1", p, io)
	}
	for _, line := range io {
		var keys []string
		for _, kv := range line.Values {
			keys = append(keys, kv.Key)
		}
		r, _ := client.Get(line.Values, "rbytes")
		rios, _ := client.Get(line.Values, "rios")
		if !slices.Equal(keys, want) || r%pageSize != 0 || (rios == 0) != (r == 0) {
			t.Errorf("%s: io.stat line %v", p, line)
		}
	}
}

// Without Cgroups, fs/cgroup is empty as in a sysfs, and the ABI has no
// cgroup files.
func TestCgroupNone(t *testing.T) {
	a, w := cgroupTree(t, "rwsem", 0)
	if cgs := cgroupsBelow(t, a.Tree); len(cgs) != 0 {
		t.Errorf("cgroups %q without Cgroups", cgs)
	}
	if _, err := w.Lresolve(kernfsim.RootCred, client.NewCgroupPath); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("%s without a hierarchy: got %v, want ENOENT", client.NewCgroupPath, err)
	}
	if err := a.ABI.NewCgroup("x"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("NewCgroup without a hierarchy: got %v, want ENODEV", err)
	}
}

// A container starts and stops: its cgroup is made in a pod's slice
// through new_cgroup and removed through delete_cgroup, under every lock
// that takes writers; a slice with a child cgroup cannot be removed.
func TestCgroupABI(t *testing.T) {
	testkit.ForEachLock(t, testtree.Writers, func(t *testing.T, lock string) {
		_, w := cgroupTree(t, lock, 2)
		pod, ctr := "kubepods.slice/kubepods-podtest.slice", "kubepods.slice/kubepods-podtest.slice/cri-containerd-test.scope"
		require.NoError(t, rootWrite(w, client.NewCgroupPath, string(client.NewCgroupLine(pod))))
		require.NoError(t, rootWrite(w, client.NewCgroupPath, string(client.NewCgroupLine("/"+ctr))))
		dir := "fs/cgroup/" + ctr + "/"
		mem := testkit.Must(client.ParseFlatKeyed([]byte(synthRead(t, w, dir+"memory.stat"))))(t)
		checkMemoryStat(t, ctr, mem, synthRead(t, w, dir+"memory.current"))
		checkIOStat(t, ctr, testkit.Must(client.ParseNestedKeyed([]byte(synthRead(t, w, dir+"io.stat"))))(t))
		if got := synthRead(t, w, dir+"cgroup.procs"); got != "" {
			t.Errorf("a new cgroup's cgroup.procs %q, want none", got)
		}
		if err := rootWrite(w, client.DeleteCgroupPath, string(client.DeleteCgroupLine(pod))); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("deleting a slice with a container: got %v, want EBUSY", err)
		}
		require.NoError(t, rootWrite(w, client.DeleteCgroupPath, string(client.DeleteCgroupLine(ctr))))
		require.NoError(t, rootWrite(w, client.DeleteCgroupPath, string(client.DeleteCgroupLine(pod))))
		_, err := w.Lresolve(kernfsim.RootCred, "fs/cgroup/"+pod)
		testkit.WantErrno(t, err, syscall.ENOENT)
	})
}

func TestCgroupABIBadInput(t *testing.T) {
	a, w := cgroupTree(t, "rwsem", 2)
	require.NoError(t, a.ABI.NewCgroup("keep.slice"))
	require.NoError(t, a.ABI.NewCgroup("keep.slice/child.scope"))
	before := a.Tree.Nodes()
	for _, c := range []struct {
		file, data string
		want       syscall.Errno
	}{
		{"new_cgroup", "", syscall.EINVAL},
		{"new_cgroup", "\n", syscall.EINVAL},
		{"new_cgroup", "a b", syscall.EINVAL},
		{"new_cgroup", "a//b", syscall.EINVAL},
		{"new_cgroup", "a/../b", syscall.EINVAL},
		{"new_cgroup", "/", syscall.EINVAL},
		{"new_cgroup", strings.Repeat("x", 256), syscall.EINVAL},
		{"new_cgroup", "bad\x01name", syscall.EINVAL},
		{"new_cgroup", "keep.slice", syscall.EEXIST},
		{"new_cgroup", "keep.slice/memory.stat", syscall.EEXIST},
		{"new_cgroup", "nosuch.slice/x.scope", syscall.ENOENT},
		{"new_cgroup", "keep.slice/memory.stat/x", syscall.ENOTDIR},
		{"delete_cgroup", "nosuch.slice", syscall.ENOENT},
		{"delete_cgroup", "keep.slice", syscall.EBUSY},
		{"delete_cgroup", "keep.slice/cpu.stat", syscall.ENOTDIR},
		{"delete_cgroup", "..", syscall.EINVAL},
		{"delete_cgroup", "", syscall.EINVAL},
	} {
		err := rootWrite(w, "bus/kernfsim/"+c.file, c.data)
		if !errors.Is(err, c.want) {
			t.Errorf("%s %q: got %v, want %v", c.file, c.data, err, c.want)
		}
	}
	if got := a.Tree.Nodes(); got != before {
		t.Fatalf("nodes after rejected writes: got %d, want %d (nothing may change)", got, before)
	}
	err := a.ABI.DeleteCgroup(t.Context(), "nosuch.slice")
	if pe := (*fs.PathError)(nil); !errors.As(err, &pe) || pe.Op != "delete_cgroup" || pe.Path != "nosuch.slice" {
		t.Errorf("DeleteCgroup(nosuch.slice): got %v, want a *fs.PathError naming the cgroup", err)
	}
}

// Containers start and stop in a slice while another writer removes and
// remakes the slice: every write succeeds or fails as mkdir and rmdir
// would (EBUSY for a slice with a container, ENOENT for a cgroup in one
// gone or going), and once everything is removed the tree is back to its
// size: no cgroup was left in a removed one.
func TestCgroupABIConcurrent(t *testing.T) {
	testkit.ForEachLock(t, []string{"rwsem", "rcu"}, func(t *testing.T, lock string) {
		a, _ := cgroupTree(t, lock, 1)
		base := a.Tree.Nodes()
		require.NoError(t, a.ABI.NewCgroup("race.slice"))
		ok := func(err error, errnos ...syscall.Errno) bool {
			return err == nil || slices.ContainsFunc(errnos, func(e syscall.Errno) bool { return errors.Is(err, e) })
		}
		var wg sync.WaitGroup
		errs := make(chan error, 5)
		for k := range 4 {
			wg.Go(func() {
				c := "race.slice/c" + strconv.Itoa(k) + ".scope"
				for range 100 {
					if err := a.ABI.NewCgroup(c); !ok(err, syscall.ENOENT) {
						errs <- err
						return
					}
					if err := a.ABI.DeleteCgroup(t.Context(), c); !ok(err, syscall.ENOENT) {
						errs <- err
						return
					}
				}
			})
		}
		wg.Go(func() {
			for range 100 {
				if err := a.ABI.DeleteCgroup(t.Context(), "race.slice"); !ok(err, syscall.EBUSY) {
					errs <- err
					return
				}
				if err := a.ABI.NewCgroup("race.slice"); !ok(err, syscall.EEXIST) {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for k := range 4 {
			a.ABI.DeleteCgroup(t.Context(), "race.slice/c"+strconv.Itoa(k)+".scope")
		}
		require.NoError(t, a.ABI.DeleteCgroup(t.Context(), "race.slice"))
		a.Tree.Barrier()
		if got := a.Tree.Nodes(); got != base {
			t.Errorf("nodes after removing everything: %d, want %d", got, base)
		}
	})
}

// new_cgroup keeps cgroup_mkdir's hierarchy limits (EAGAIN past a
// cgroup.max.depth or cgroup.max.descendants of the parent or any cgroup
// above it, the root's included), the limit files take "max" or a count
// only, and delete_cgroup refuses a populated cgroup (EBUSY), as
// cgroup_rmdir does. Issue 33: both were ignored.
func TestCgroupABILimits(t *testing.T) {
	a, w := cgroupTree(t, "rwsem", 2)
	ctr := cgroupsBelow(t, a.Tree)[len(cgroupsBelow(t, a.Tree))-1]
	require.NotEmpty(t, synthRead(t, w, "fs/cgroup/"+ctr+"/cgroup.procs"), "a synthetic container lists processes")
	set := func(file, v string) {
		require.NoError(t, rootWrite(w, "fs/cgroup/"+file, v), "write %q to %s", v, file)
	}
	for _, c := range []struct {
		name  string
		setup func()
		op    func() error
		want  syscall.Errno
	}{
		{"a container with processes", func() {}, func() error { return a.ABI.DeleteCgroup(t.Context(), ctr) }, syscall.EBUSY},
		{"depth 1 below kubepods.slice, a grandchild", func() {
			set("kubepods.slice/cgroup.max.depth", "1")
			require.NoError(t, a.ABI.NewCgroup("kubepods.slice/a.slice"))
		}, func() error { return a.ABI.NewCgroup("kubepods.slice/a.slice/b.scope") }, syscall.EAGAIN},
		{"depth max again", func() { set("kubepods.slice/cgroup.max.depth", "max\n") },
			func() error { return a.ABI.NewCgroup("kubepods.slice/a.slice/b.scope") }, 0},
		{"the root's depth 0", func() { set("cgroup.max.depth", "0") }, func() error { return a.ABI.NewCgroup("x.slice") }, syscall.EAGAIN},
		{"the root's depth 2, at depth 3", func() { set("cgroup.max.depth", "2") },
			func() error { return a.ABI.NewCgroup("kubepods.slice/a.slice/b.scope/c.scope") }, syscall.EAGAIN},
		{"descendants at the limit", func() {
			set("cgroup.max.depth", "max")
			set("kubepods.slice/cgroup.max.descendants", strconv.Itoa(countBelow(t, a.Tree, "kubepods.slice")))
		}, func() error { return a.ABI.NewCgroup("kubepods.slice/d.slice") }, syscall.EAGAIN},
		{"descendants one below the limit", func() {
			set("kubepods.slice/cgroup.max.descendants", strconv.Itoa(countBelow(t, a.Tree, "kubepods.slice")+1))
		}, func() error { return a.ABI.NewCgroup("kubepods.slice/d.slice") }, 0},
		{"an existing name past the limit", func() {}, func() error { return a.ABI.NewCgroup("kubepods.slice/d.slice") }, syscall.EEXIST},
		{"a removed one frees its place", func() { require.NoError(t, a.ABI.DeleteCgroup(t.Context(), "kubepods.slice/d.slice")) },
			func() error { return a.ABI.NewCgroup("kubepods.slice/d.slice") }, 0},
	} {
		c.setup()
		before := a.Tree.Nodes()
		err := c.op()
		switch {
		case c.want == 0 && err != nil:
			t.Errorf("%s: got %v, want success", c.name, err)
		case c.want != 0 && !errors.Is(err, c.want):
			t.Errorf("%s: got %v, want %v", c.name, err, kernfsim.ErrnoName(c.want))
		case c.want != 0 && a.Tree.Nodes() != before:
			t.Errorf("%s: refused, but the tree changed (%d nodes, were %d)", c.name, a.Tree.Nodes(), before)
		}
	}
	for _, bad := range []string{"-1", "abc", "", "1 2", "+1"} {
		if err := rootWrite(w, "fs/cgroup/cgroup.max.depth", bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("cgroup.max.depth %q: got %v, want EINVAL", bad, err)
		}
	}
}

// countBelow is the number of cgroups below fs/cgroup/dir.
func countBelow(t *testing.T, tr *kernfsim.Tree, dir string) int {
	n := 0
	for _, p := range cgroupsBelow(t, tr) {
		if strings.HasPrefix(p, dir+"/") {
			n++
		}
	}
	return n
}

// Under lock none the tree takes no writers: new_cgroup and
// delete_cgroup answer as every other control file does, with
// locking.ErrReadOnly (EROFS over FUSE), not EIO. Issue 33.
func TestCgroupABIReadOnly(t *testing.T) {
	a, w := cgroupTree(t, "none", 2)
	ctr := cgroupsBelow(t, a.Tree)[0]
	for _, c := range []struct{ file, data string }{
		{client.NewCgroupPath, string(client.NewCgroupLine("x.slice"))},
		{client.DeleteCgroupPath, string(client.DeleteCgroupLine(ctr))},
		{"bus/kernfsim/new_device", "x"},
	} {
		if err := rootWrite(w, c.file, c.data); !errors.Is(err, locking.ErrReadOnly) {
			t.Errorf("%s %q under none: got %v, want %v", c.file, c.data, err, locking.ErrReadOnly)
		}
	}
}
