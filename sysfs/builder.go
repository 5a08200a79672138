package sysfs

import (
	"io/fs"
	"slices"
	"strings"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// The synthetic tree is written declaratively, as gVisor's sysfs is: nested dir
// literals of named entries, with each(n, fn) for n generated children,
// and one recursive builder. Where n is a big machine's count (memory
// blocks), eachDir and eachLink generate children that cost no spec of
// their own. For example:
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

// gen generates n children, in one of three forms: each's, where at(i)
// is the i-th child's name and spec; eachDir's, directories named name(i)
// whose entries fill appends; eachLink's, symlinks named name(i) to
// linkDir/name(i).
type gen struct {
	n       int
	at      func(i int) (string, spec)
	name    func(i int) string
	fill    func(i int, d dir) dir
	linkDir string
}

func each(n int, at func(i int) (string, spec)) ent { return ent{spec: &gen{n: n, at: at}} }

// eachDir generates n directories: the i-th named name(i), its entries
// those fill(i, d) appends to d. fill is called when the directory is
// filled, after the batch that adds all n, into a scratch dir reused for
// every one, so 90,500 memory blocks do not each make a dir literal and
// keep it until then.
func eachDir(n int, name func(i int) string, fill func(i int, d dir) dir) ent {
	return ent{spec: &gen{n: n, name: name, fill: fill}}
}

// eachLink generates n symlinks: the i-th named name(i), linking to
// linkDir/name(i) (a path from the root), as bus/memory/devices/memoryN
// links to devices/system/memory/memoryN. Each target is its own string,
// made once: no other link has it, so the builder does not remember it.
func eachLink(n int, linkDir string, name func(i int) string) ent {
	return ent{spec: &gen{n: n, name: name, linkDir: linkDir}}
}

func ro(s string) attr { return attr{0o444, kernfsim.Static(s + "\n")} }

func roSrc(src kernfsim.Source) attr { return attr{0o444, src} }

func rw(src kernfsim.Source) attr { return attr{0o644, src} }

func rwVal(s string) attr { return attr{0o644, kernfsim.NewValue(s + "\n")} }

func wo() attr { return attr{0o200, writeOnly{}} }

func param(mode fs.FileMode, s string) attr { return attr{mode, kernfsim.NewValue(s + "\n")} }

// builder adds specs to a tree, one AddBatch per directory, sharing one
// *Attr per mode and one string per symlink target it has made before.
// A directory's batch is written in a scratch batch of its depth, reused
// for every directory at that depth, so a batch costs no allocation once
// the first directory at its depth has grown it.
type builder struct {
	t       *kernfsim.Tree
	attrs   map[fs.FileMode]*kernfsim.Attr
	targets map[relKey]string
	dirs    int         // directories added
	levels  []*dirBatch // scratch batches by depth; levels[:depth] are in use
	depth   int         // the depth of the directory being filled
}

func newBuilder(t *kernfsim.Tree) *builder {
	return &builder{t: t, attrs: make(map[fs.FileMode]*kernfsim.Attr), targets: make(map[relKey]string)}
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
	n, err := b.t.Add(parent, name, b.shared(kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755}))
	if err != nil {
		return err
	}
	b.dirs++
	return d.addChildren(b, n, joinSynthPath(path, name))
}

// addChildren adds d's entries, generated ones included, to n in one
// batch, then fills the subdirectories among them.
func (d dir) addChildren(b *builder, n *kernfsim.Node, path string) error {
	bt := b.enter(d.size())
	defer b.leave(bt)
	for _, e := range d {
		bt.collect(b, path, e.name, e.spec)
	}
	nodes, err := b.t.AppendBatch(bt.nodes[:0], n, bt.entries)
	bt.nodes = nodes
	if err != nil {
		return err
	}
	for _, sub := range bt.subs {
		d := sub.d
		if sub.g != nil {
			bt.fill = sub.g.fill(sub.i, bt.fill[:0])
			d = bt.fill
		}
		if len(d) == 0 {
			continue
		}
		if err := d.addChildren(b, nodes[sub.n], joinSynthPath(path, bt.entries[sub.n].Name)); err != nil {
			return err
		}
	}
	b.dirs += bt.dirs
	return nil
}

// enter gives the scratch batch of the next depth, empty, with room for
// size entries.
func (b *builder) enter(size int) *dirBatch {
	b.depth++
	if b.depth > len(b.levels) {
		b.levels = append(b.levels, new(dirBatch))
	}
	bt := b.levels[b.depth-1]
	bt.entries = slices.Grow(bt.entries, size)
	return bt
}

// leave empties bt, the batch of the depth being left, dropping what it
// points to.
func (b *builder) leave(bt *dirBatch) {
	clear(bt.entries)
	clear(bt.nodes)
	clear(bt.subs)
	clear(bt.fill)
	bt.entries, bt.nodes, bt.subs, bt.fill, bt.dirs = bt.entries[:0], bt.nodes[:0], bt.subs[:0], bt.fill[:0], 0
	b.depth--
}

// size is how many nodes d makes in its own directory.
func (d dir) size() int {
	n := 0
	for _, e := range d {
		if g, ok := e.spec.(*gen); ok {
			n += g.n
		} else {
			n++
		}
	}
	return n
}

// dirBatch is one directory's entries, and where its subdirectories are
// among them.
type dirBatch struct {
	entries []kernfsim.BatchEntry
	nodes   []*kernfsim.Node // the nodes entries made
	subs    []subdir         // the directories with children
	fill    dir              // the entries of the eachDir directory being filled
	dirs    int              // directories
}

// subdir is entry n of a batch, a directory with children d, or the i-th
// directory of the eachDir g.
type subdir struct {
	n int
	d dir
	g *gen
	i int
}

// collect adds the node s makes as name (or, for a gen, the nodes it
// generates) to the batch of the directory at path.
func (bt *dirBatch) collect(b *builder, path, name string, s spec) {
	var ns kernfsim.NodeSpec
	switch s := s.(type) {
	case *gen:
		bt.collectGen(b, path, s)
		return
	case dir:
		ns = kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755}
		bt.dirs++
		if len(s) > 0 {
			bt.subs = append(bt.subs, subdir{n: len(bt.entries), d: s})
		}
	case attr:
		ns = kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: s.mode, Source: s.src}
	case link:
		ns = kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Mode: 0o777, Target: b.relTarget(path, string(s))}
	}
	bt.entries = append(bt.entries, kernfsim.BatchEntry{Name: name, Spec: b.shared(ns)})
}

// collectGen adds the nodes g generates to the batch of the directory at
// path.
func (bt *dirBatch) collectGen(b *builder, path string, g *gen) {
	switch {
	case g.fill != nil:
		spec := b.shared(kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755})
		bt.subs = slices.Grow(bt.subs, g.n)
		for i := range g.n {
			bt.subs = append(bt.subs, subdir{n: len(bt.entries), g: g, i: i})
			bt.entries = append(bt.entries, kernfsim.BatchEntry{Name: g.name(i), Spec: spec})
		}
		bt.dirs += g.n
	case g.name != nil:
		spec := b.shared(kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Mode: 0o777})
		up := relTarget(path, g.linkDir+"/") // the targets' directory, relative to path, ending in "/" unless path is it
		for i := range g.n {
			name := g.name(i)
			spec.Target = up + name
			bt.entries = append(bt.entries, kernfsim.BatchEntry{Name: name, Spec: spec})
		}
	default:
		for i := range g.n {
			name, sp := g.at(i)
			bt.collect(b, path, name, sp)
		}
	}
}

func (a attr) add(b *builder, parent *kernfsim.Node, path, name string) error {
	return dir{{name, a}}.addChildren(b, parent, path)
}

func (l link) add(b *builder, parent *kernfsim.Node, path, name string) error {
	return dir{{name, l}}.addChildren(b, parent, path)
}

func (g *gen) add(b *builder, parent *kernfsim.Node, path, _ string) error {
	return dir{{spec: g}}.addChildren(b, parent, path)
}

func joinSynthPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "/" + name
}

// relKey is a relative symlink target: ups "../" then rest.
type relKey struct {
	ups  int
	rest string
}

// relTarget is relTarget(dir, target), the same string for every link
// that has the same target relative to its directory (many memory blocks
// link "../../../../bus/memory"), as kernfs keeps one copy of a constant
// name (kstrdup_const).
func (b *builder) relTarget(dir, target string) string {
	k := relParts(dir, target)
	s, ok := b.targets[k]
	if !ok {
		s = k.String()
		if len(b.targets) == maxTargets {
			clear(b.targets)
		}
		b.targets[k] = s
	}
	return s
}

// maxTargets bounds the targets a builder remembers; when full it starts
// over. Targets repeat within a directory's generated entries (every
// memory block's subsystem and NUMA node links), so starting over costs
// one string per repeated target, and links to targets of their own
// (bus/memory/devices/memoryN) cost no memory once built.
const maxTargets = 4096

// relTarget is target (a path from the root) relative to the directory
// dir, as kernfs_get_target_path writes it: up from dir to the nearest
// ancestor of target's parent, then down.
func relTarget(dir, target string) string { return relParts(dir, target).String() }

// relParts is relTarget's ups and rest, without making the string.
func relParts(dir, target string) relKey {
	tparent := target[:max(strings.LastIndexByte(target, '/'), 0)]
	ups := 0
	for dir != "" && !isAncestorOrSelf(dir, tparent) {
		dir = dir[:max(strings.LastIndexByte(dir, '/'), 0)]
		ups++
	}
	if dir != "" {
		target = target[len(dir)+1:]
	}
	return relKey{ups, target}
}

func (k relKey) String() string {
	var b strings.Builder
	b.Grow(3*k.ups + len(k.rest))
	for range k.ups {
		b.WriteString("../")
	}
	b.WriteString(k.rest)
	return b.String()
}

// isAncestorOrSelf reports whether path a is p or one of p's ancestors.
func isAncestorOrSelf(a, p string) bool {
	return strings.HasPrefix(p, a) && (len(p) == len(a) || p[len(a)] == '/')
}
