package sysfs

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// sysfsTopDirs are directories a sysfs holds at its top: an archive whose
// top has one of them is a tar of /sys's own entries.
var sysfsTopDirs = []string{"block", "bus", "class", "dev", "devices", "firmware", "fs", "hypervisor", "kernel", "module", "power"}

// findRoot picks the archive's directory that is the sysfs: T/sys when
// everything is under one top directory T that holds sys/
// (hwloc-gather-topology's layout), else sys/, else the archive's top if
// it holds sysfs's own directories (devices/, bus/ ...).
func (a *archive) findRoot() (string, error) {
	tops := a.tops()
	if len(tops) == 1 && a.isDir(tops[0]+"/sys") {
		return tops[0] + "/sys", nil
	}
	if a.isDir("sys") {
		return "sys", nil
	}
	for _, d := range sysfsTopDirs {
		if slices.Contains(tops, d) {
			return ".", nil
		}
	}
	found := strings.Join(tops[:min(len(tops), 5)], ", ")
	if len(tops) == 0 {
		found = "nothing"
	}
	return "", a.fail(nil, "holds no sys/ directory: neither DIR/sys/ (hwloc-gather-topology's layout), sys/, nor /sys's own top directories (devices/, bus/, class/ ...); its top holds "+found,
		"give an archive of a /sys: hwloc-gather-topology FILE, or tar -C / -c sys")
}

// tops are the first components of the archive's paths, sorted.
func (a *archive) tops() []string {
	seen := map[string]bool{}
	var tops []string
	for _, e := range a.order {
		top, _, _ := strings.Cut(e.path, "/")
		if top != "." && !seen[top] {
			seen[top] = true
			tops = append(tops, top)
		}
	}
	slices.Sort(tops)
	return tops
}

// isDir reports whether p is a directory of the archive: an entry of its
// own, or the parent of one.
func (a *archive) isDir(p string) bool {
	if e := a.entries[p]; e != nil {
		return e.kind == kernfsim.KindDir
	}
	for _, e := range a.order {
		if strings.HasPrefix(e.path, p+"/") {
			return true
		}
	}
	return false
}

// archDir is one directory of the tree to build, with its entries.
type archDir struct {
	rel     string // below the root; "" for the root
	node    *kernfsim.Node
	entries map[string]*archEntry // by name
	subs    map[string]*archDir   // the subdirectories among entries
}

// build checks the entries below the root and adds them to t, one
// AddBatch per directory, parents first.
func (a *archive) build(t *kernfsim.Tree, rep *ArchiveReport) error {
	root, err := a.findRoot()
	if err != nil {
		return err
	}
	rep.Root = root
	top := &archDir{entries: map[string]*archEntry{}, subs: map[string]*archDir{}}
	for _, e := range a.order {
		rel, ok := below(root, e.path)
		if !ok {
			rep.Outside++
			continue
		}
		if rel == "" {
			continue // the root's own entry: its mode and owner, set below
		}
		if err := a.place(top, rel, e); err != nil {
			return err
		}
	}
	return a.addAll(t, top, a.entries[root], rep)
}

// below is p relative to root, and whether p is root or below it.
func below(root, p string) (string, bool) {
	switch {
	case p == root:
		return "", true
	case root == ".":
		return p, true
	}
	rel, ok := strings.CutPrefix(p, root+"/")
	return rel, ok
}

// place checks e, at rel below the root, and files it in its directory,
// making the directories above it as needed.
func (a *archive) place(top *archDir, rel string, e *archEntry) error {
	parent, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	known := a.lastDir != nil && parent == a.lastParent // its names checked, its directories made
	checked := rel
	if known {
		checked = name
	}
	if err := a.check(checked, rel, e); err != nil {
		return err
	}
	d := a.lastDir
	if !known {
		d = top
		for dir, rest, ok := strings.Cut(rel, "/"); ok; dir, rest, ok = strings.Cut(rest, "/") {
			if d = d.sub(dir); d == nil {
				return a.fail(e, "is below an entry that is not a directory", fixRemake)
			}
		}
		a.lastDir, a.lastParent = d, parent
	}
	if e.kind == kernfsim.KindDir {
		d.sub(name)
	} else if d.subs[name] != nil {
		return a.fail(e, "is not a directory, but entries below it make it one", fixRemake)
	}
	d.entries[name] = e
	return nil
}

// sub is d's subdirectory name, made if it is new (with an entry of its
// own until the archive's is placed); nil if name is not a directory.
func (d *archDir) sub(name string) *archDir {
	if s := d.subs[name]; s != nil {
		return s
	}
	if e := d.entries[name]; e != nil && e.kind != kernfsim.KindDir {
		return nil
	}
	s := &archDir{rel: joinSynthPath(d.rel, name), entries: map[string]*archEntry{}, subs: map[string]*archDir{}}
	d.subs[name] = s
	if d.entries[name] == nil {
		d.entries[name] = &archEntry{kind: kernfsim.KindDir, mode: 0o755} // implicit: no name
	}
	return s
}

// check refuses what a sysfs cannot hold below the root: a name kernfsim
// cannot hold (among names, the part of rel not checked before), an
// absurd size, a symlink out of the tree.
func (a *archive) check(names, rel string, e *archEntry) error {
	for name := range strings.SplitSeq(names, "/") {
		if errno := kernfsim.ValidateName(name); errno != 0 {
			return a.fail(e, fmt.Sprintf("has a name a sysfs cannot hold (%s)", kernfsim.ErrnoName(errno)), "rename or remove it")
		}
	}
	switch {
	case e.kind == kernfsim.KindAttr && e.size > a.opts.MaxAttrSize:
		return a.fail(e, fmt.Sprintf("is %d bytes, more than %d: no sysfs attribute is that big", e.size, a.opts.MaxAttrSize), "remove it from the archive, or make the archive again from /sys")
	case e.kind != kernfsim.KindSymlink:
		return nil
	case e.target == "" || strings.HasPrefix(e.target, "/"):
		return a.fail(e, fmt.Sprintf("is a symlink to %q, out of the tree: sysfs links are relative", e.target), "make the archive again from /sys, or remove the link")
	}
	if to := path.Join(path.Dir(rel), e.target); to == ".." || strings.HasPrefix(to, "../") {
		return a.fail(e, fmt.Sprintf("is a symlink to %q, which points out of the tree", e.target), "make the archive again from /sys, or remove the link")
	}
	return nil
}

// addAll gives the root rootEntry's mode and owner (if the archive has
// one) and adds every directory's entries, parents first.
func (a *archive) addAll(t *kernfsim.Tree, top *archDir, rootEntry *archEntry, rep *ArchiveReport) error {
	attrs := map[attrKey]*kernfsim.Attr{}
	if rootEntry != nil {
		args := kernfsim.SetattrArgs{Valid: kernfsim.SetMode | kernfsim.SetUid | kernfsim.SetGid, Mode: rootEntry.mode, Uid: rootEntry.uid, Gid: rootEntry.gid}
		if err := t.Setattr(t.Root(), args, kernfsim.RootCred); err != nil {
			return err
		}
	}
	top.node = t.Root()
	for dirs := []*archDir{top}; len(dirs) > 0; dirs = dirs[1:] {
		subs, err := a.addDir(t, dirs[0], attrs, rep)
		if err != nil {
			return err
		}
		dirs = append(dirs, subs...)
	}
	return nil
}

// addDir adds d's entries under d.node in name order and returns its
// subdirectories, their nodes set.
func (a *archive) addDir(t *kernfsim.Tree, d *archDir, attrs map[attrKey]*kernfsim.Attr, rep *ArchiveReport) ([]*archDir, error) {
	names := make([]string, 0, len(d.entries))
	for name := range d.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	batch := make([]kernfsim.BatchEntry, len(names))
	for i, name := range names {
		batch[i] = kernfsim.BatchEntry{Name: name, Spec: a.spec(d, name, t, attrs, rep)}
	}
	nodes, err := t.AddBatch(d.node, batch)
	if err != nil {
		return nil, err
	}
	var subs []*archDir
	for i, name := range names {
		if s := d.subs[name]; s != nil {
			s.node = nodes[i]
			subs = append(subs, s)
		}
	}
	return subs, nil
}

// spec is the node for e, as MirrorHost makes it for the same file on
// disk, and counts it.
func (a *archive) spec(d *archDir, name string, t *kernfsim.Tree, attrs map[attrKey]*kernfsim.Attr, rep *ArchiveReport) kernfsim.NodeSpec {
	e := d.entries[name]
	k := attrKey{e.mode, e.uid, e.gid}
	attr := attrs[k]
	if attr == nil {
		now := t.Now()
		attr = &kernfsim.Attr{Mode: k.mode, Uid: k.uid, Gid: k.gid, Mtime: now, Ctime: now}
		attrs[k] = attr
	}
	spec := kernfsim.NodeSpec{Kind: e.kind, Attr: attr, Target: e.target}
	switch e.kind {
	case kernfsim.KindDir:
		rep.Dirs++
		if e.name == "" {
			rep.ImplicitDirs++
		}
	case kernfsim.KindSymlink:
		rep.Symlinks++
	case kernfsim.KindAttr:
		rep.Attrs++
		spec.Source = archiveSource(e.mode, e.data)
		if e.mode&0o444 != 0 {
			rep.Bytes += int64(len(e.data))
		}
		if e.size > int64(a.opts.MaxFileSize) {
			rep.Truncated = append(rep.Truncated, joinSynthPath(d.rel, name))
		}
		if e.size == kernfsim.PageSize && strings.HasSuffix(e.data, "\x00") {
			rep.Padded++
		}
	}
	return spec
}

// archiveSource serves an attribute of mode holding data, as MirrorHost
// serves a host file of that mode that read data: no read bit, added
// unread; writable, a Value; else Static.
func archiveSource(mode fs.FileMode, data string) kernfsim.Source {
	switch writable := mode&0o222 != 0; {
	case mode&0o444 == 0 && writable:
		return writeOnly{}
	case mode&0o444 == 0:
		return kernfsim.Static("")
	default:
		return hostRead{data: data}.source(writable)
	}
}
