package sysfs

import (
	"io/fs"
	"strings"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// The synthetic tree is written declaratively, as gVisor's sysfs is: nested dir
// literals of named entries, with each(n, fn) for n generated children,
// and one recursive builder. For example:
//
//	dir{
//		{"kernel_max", ro("8191")},
//		{"online", rw(cpuOnline{h, 1})},
//		{"node0", link("devices/system/node/node0")},
//		each(s.CPUs, s.cpu),
//	}

// spec is one node of a declarative topology: a dir, an attr, a link, or
// the generated children of an each.
type spec interface {
	add(b *builder, parent *kernfsim.Node, path, name string) error
}

// dir is a directory's children, in the order they are added.
type dir []ent

// ent is one named entry of a dir (unnamed for an each).
type ent struct {
	name string
	spec spec
}

// attr is an attribute file.
type attr struct {
	mode fs.FileMode
	src  kernfsim.Source
}

// link is a symlink to a path from the root; it is written relative to
// its directory, as sysfs does.
type link string

// gen generates n children; each returns it as an entry of a dir.
type gen struct {
	n  int
	at func(i int) (string, spec)
}

func each(n int, at func(i int) (string, spec)) ent { return ent{spec: &gen{n, at}} }

func ro(s string) attr { return attr{0o444, kernfsim.Static(s + "\n")} }

func roSrc(src kernfsim.Source) attr { return attr{0o444, src} }

func rw(src kernfsim.Source) attr { return attr{0o644, src} }

func rwVal(s string) attr { return attr{0o644, kernfsim.NewValue(s + "\n")} }

func wo() attr { return attr{0o200, writeOnly{}} }

func param(mode fs.FileMode, s string) attr { return attr{mode, kernfsim.NewValue(s + "\n")} }

// builder adds specs to a tree, sharing one *Attr per mode.
type builder struct {
	t     *kernfsim.Tree
	attrs map[fs.FileMode]*kernfsim.Attr
	dirs  int // directories added
}

func newBuilder(t *kernfsim.Tree) *builder {
	return &builder{t: t, attrs: make(map[fs.FileMode]*kernfsim.Attr)}
}

func (b *builder) add(parent *kernfsim.Node, name string, spec kernfsim.NodeSpec) (*kernfsim.Node, error) {
	return b.t.Add(parent, name, b.shared(spec))
}

// shared gives spec the one *Attr of its mode.
func (b *builder) shared(spec kernfsim.NodeSpec) kernfsim.NodeSpec {
	a := b.attrs[spec.Mode]
	if a == nil {
		now := b.t.Now()
		a = &kernfsim.Attr{Mode: spec.Mode, Mtime: now, Ctime: now}
		b.attrs[spec.Mode] = a
	}
	spec.Attr = a
	return spec
}

func (d dir) add(b *builder, parent *kernfsim.Node, path, name string) error {
	n, err := b.add(parent, name, kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755})
	if err != nil {
		return err
	}
	b.dirs++
	if path != "" {
		name = path + "/" + name
	}
	return d.addChildren(b, n, name)
}

func (d dir) addChildren(b *builder, n *kernfsim.Node, path string) error {
	for _, e := range d {
		if err := e.spec.add(b, n, path, e.name); err != nil {
			return err
		}
	}
	return nil
}

func (a attr) add(b *builder, parent *kernfsim.Node, _, name string) error {
	_, err := b.add(parent, name, kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: a.mode, Source: a.src})
	return err
}

func (l link) add(b *builder, parent *kernfsim.Node, path, name string) error {
	_, err := b.add(parent, name, kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Mode: 0o777, Target: relTarget(path, string(l))})
	return err
}

func (g *gen) add(b *builder, parent *kernfsim.Node, path, _ string) error {
	entries := make([]kernfsim.BatchEntry, g.n)
	specs := make([]spec, g.n)
	for i := range g.n {
		name, s := g.at(i)
		ns, ok := leafSpec(s, path)
		if !ok {
			return g.addOneByOne(b, parent, path)
		}
		entries[i], specs[i] = kernfsim.BatchEntry{Name: name, Spec: b.shared(ns)}, s
	}
	nodes, err := b.t.AddBatch(parent, entries)
	if err != nil {
		return err
	}
	for i, n := range nodes {
		if d, ok := specs[i].(dir); ok {
			b.dirs++
			if err := d.addChildren(b, n, joinSynthPath(path, entries[i].Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// leafSpec is the node a spec makes in its parent, its own children aside
// (false for a gen, which makes several).
func leafSpec(s spec, path string) (kernfsim.NodeSpec, bool) {
	switch s := s.(type) {
	case dir:
		return kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755}, true
	case attr:
		return kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: s.mode, Source: s.src}, true
	case link:
		return kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Mode: 0o777, Target: relTarget(path, string(s))}, true
	}
	return kernfsim.NodeSpec{}, false
}

func (g *gen) addOneByOne(b *builder, parent *kernfsim.Node, path string) error {
	for i := range g.n {
		name, s := g.at(i)
		if err := s.add(b, parent, path, name); err != nil {
			return err
		}
	}
	return nil
}

func joinSynthPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "/" + name
}

// relTarget is target (a path from the root) relative to the directory
// dir, as kernfs_get_target_path writes it: up from dir to the nearest
// ancestor of target's parent, then down.
func relTarget(dir, target string) string {
	tparent := target[:max(strings.LastIndexByte(target, '/'), 0)]
	ups := 0
	for dir != "" && !isAncestorOrSelf(dir, tparent) {
		dir = dir[:max(strings.LastIndexByte(dir, '/'), 0)]
		ups++
	}
	if dir != "" {
		target = target[len(dir)+1:]
	}
	var b strings.Builder
	b.Grow(3*ups + len(target))
	for range ups {
		b.WriteString("../")
	}
	b.WriteString(target)
	return b.String()
}

// isAncestorOrSelf reports whether path a is p or one of p's ancestors.
func isAncestorOrSelf(a, p string) bool {
	return strings.HasPrefix(p, a) && (len(p) == len(a) || p[len(a)] == '/')
}
