package sysfs

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"syscall"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// The limits cgroup_mkdir and cgroup_rmdir keep (kernel/cgroup/cgroup.c):
//
//   - cgroup_check_hierarchy_limits: walking up from the parent, a cgroup
//     level steps above the new one that has cgroup.max.depth <= level, or
//     that has cgroup.max.descendants or more cgroups below it, refuses
//     the mkdir with EAGAIN;
//   - cgroup_destroy_locked: a populated cgroup (processes in its
//     cgroup.procs) refuses the rmdir with EBUSY.
//
// A limit is "max" or a count; the files accept nothing else (EINVAL), as
// cgroup_max_depth_write and cgroup_max_descendants_write.

// cgLimit is cgroup.max.depth or cgroup.max.descendants: "max" or a
// non-negative count.
type cgLimit struct{ v *kernfsim.Value }

func newCgLimit(*cgroup) kernfsim.Source { return cgLimit{kernfsim.NewValue("max\n")} }

func (l cgLimit) Show(ctx context.Context, buf *bytes.Buffer) error { return l.v.Show(ctx, buf) }

func (l cgLimit) Store(ctx context.Context, data []byte) error {
	n, ok := parseCgLimit(data)
	if !ok {
		return syscall.EINVAL
	}
	s := "max\n"
	if n >= 0 {
		s = strconv.Itoa(n) + "\n"
	}
	return l.v.Store(ctx, []byte(s))
}

// limit is l's value, -1 for "max".
func (l cgLimit) limit() int {
	var buf bytes.Buffer
	l.v.Show(context.Background(), &buf)
	n, _ := parseCgLimit(buf.Bytes())
	return n
}

// parseCgLimit parses "max" (-1) or a non-negative count, as the kernel
// does (surrounding white space stripped).
func parseCgLimit(data []byte) (int, bool) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return -1, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.HasPrefix(s, "+") {
		return 0, false
	}
	return n, true
}

// cgroupLimit is the limit named file of the cgroup d, -1 where it has
// none ("max", or no such file).
func cgroupLimit(t *kernfsim.Tree, d *kernfsim.Node, file string) int {
	n, err := t.Lookup(d, file)
	if err != nil {
		return -1
	}
	l, ok := n.Source().(cgLimit)
	if !ok {
		return -1
	}
	return l.limit()
}

// hierarchyAllows is cgroup_check_hierarchy_limits for a new cgroup in
// parent: no cgroup from parent up to the root is at its depth or
// descendants limit.
//
// Preconditions: g.mu is held.
func (g *cgroupABI) hierarchyAllows(parent *kernfsim.Node) bool {
	level := 0
	for d := parent; d != nil; d = d.Parent() {
		if depth := cgroupLimit(g.t, d, "cgroup.max.depth"); depth >= 0 && level >= depth {
			return false
		}
		if max := cgroupLimit(g.t, d, "cgroup.max.descendants"); max >= 0 && countCgroups(g.t, d, max) >= max {
			return false
		}
		if d == g.root {
			return true
		}
		level++
	}
	return true
}

// countCgroups is the number of cgroups below d, counted up to limit at
// most (the count only needs comparing with it).
func countCgroups(t *kernfsim.Tree, d *kernfsim.Node, limit int) int {
	count := 0
	var walk func(d *kernfsim.Node)
	walk = func(d *kernfsim.Node) {
		var dirs []string
		t.Readdir(d, 0, func(e kernfsim.Dirent) bool {
			if e.Kind == kernfsim.KindDir {
				dirs = append(dirs, e.Name)
			}
			return true
		})
		for _, name := range dirs {
			if count >= limit {
				return
			}
			if n, err := t.Lookup(d, name); err == nil {
				count++
				walk(n)
			}
		}
	}
	walk(d)
	return count
}

// populated reports whether the cgroup d has processes (its cgroup.procs
// lists any), which cgroup_destroy_locked refuses to remove.
func populated(t *kernfsim.Tree, d *kernfsim.Node) bool {
	n, err := t.Lookup(d, "cgroup.procs")
	if err != nil {
		return false
	}
	p, ok := n.Source().(cgroupProcs)
	return ok && p.c.procs > 0
}
