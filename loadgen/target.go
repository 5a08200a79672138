package loadgen

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/sysfs"
)

// target serves a run's operations. Its methods are safe for concurrent
// use; each worker passes its own buffer. Paths are in the form abs
// returns.
type target interface {
	// readFile opens p read-only, reads len(buf) bytes at offset 0 and
	// closes it.
	readFile(p string, buf []byte) error
	// stat is stat(2) of p, following symlinks.
	stat(p string) error
	// readDir opens the directory p, reads every entry and closes it; buf
	// is scratch space.
	readDir(p string, buf []byte) error
	// abs is the form of rel (a path relative to the target's root) the
	// other methods take.
	abs(rel string) string
	// list returns the entries of the directory rel, for choosing files.
	list(rel string) ([]entry, error)
	// write writes data to the attribute rel as one write(2) (churn).
	write(rel string, data []byte) error
}

// entry is a directory entry.
type entry struct {
	name string
	dir  bool // a directory (not a symlink to one)
	file bool // a regular file (a sysfs attribute)
}

// simTarget is the in-process walker: the tree's own code path, no system
// calls.
type simTarget struct {
	t    *kernfsim.Tree
	w    *kernfsim.Walker
	cred kernfsim.Cred
	spin uint64      // immutable: spin iterations of Target.SimCost, per operation
	proc *simProcess // immutable pointer: what the workers share as one process's threads, or nil (Target.SimShared)
}

// sysMountDepth is how many dentries above sysfs's root a walk from "/"
// holds in ref-walk: "/" (kernfsim.WalkerOptions.MountDepth).
const sysMountDepth = 1

// work is the operation's work outside the lock (Target.SimCost).
func (s *simTarget) work() {
	if s.spin > 0 {
		spinSink(spin(s.spin))
	}
}

// newSimTarget builds t's tree and walker for workers threads.
func newSimTarget(t targets.Target, churn bool, workers int) (*simTarget, error) {
	tree, err := buildSimTree(t, churn)
	if err != nil {
		return nil, err
	}
	w := kernfsim.NewWalker(tree, kernfsim.WalkerOptions{RefWalk: t.SimSharedWrites(), MountDepth: sysMountDepth})
	st := &simTarget{t: tree, w: w, cred: targets.DefaultSimCred, spin: spinIterations(t.SimCost)}
	if t.SimSharedWrites() {
		st.proc = newSimProcess(workers)
	}
	if t.Cred != nil {
		st.cred = *t.Cred
	}
	return st, nil
}

// buildSimTree is t's tree: t.Build's (which has the in-tree ABI), or the
// synthetic tree t.Tree sizes, with the ABI if abi (churn writes to it).
func buildSimTree(t targets.Target, abi bool) (*kernfsim.Tree, error) {
	if t.Build != nil {
		return t.Build.BuildTree(t.Lock)
	}
	a, err := sysfs.Assemble(sysfs.Options{Lock: t.Lock, Synth: t.Tree.WithDefaults(), ABI: abi})
	if err != nil {
		return nil, targets.NewAssembleError(err)
	}
	return a.Tree, nil
}

// readFile returns a bare errno, as pathTarget's system calls do: an
// error value would cost the sim an allocation per failed operation
// (a missing-path run fails every one) that the kernel does not make.
func (s *simTarget) readFile(p string, buf []byte) error {
	s.work()
	fd := s.proc.open()
	if _, e := s.w.ReadFileErrno(s.cred, p, buf); e != 0 {
		s.proc.close(fd)
		return e
	}
	s.proc.opened(fd)
	s.proc.close(fd)
	return nil
}

// stat returns a bare errno, as readFile.
func (s *simTarget) stat(p string) error {
	s.work()
	if _, e := s.w.StatErrno(s.cred, p); e != 0 {
		return e
	}
	return nil
}

func (s *simTarget) readDir(p string, _ []byte) error {
	s.work()
	fd := s.proc.open()
	defer s.proc.close(fd)
	n, err := s.w.Resolve(s.cred, p)
	if err != nil {
		return err
	}
	f, err := s.t.Open(n, os.O_RDONLY, s.cred)
	if err != nil {
		return err
	}
	s.proc.opened(fd)
	defer f.Release()
	return s.t.Readdir(n, 0, func(kernfsim.Dirent) bool { return true })
}

func (s *simTarget) abs(rel string) string { return strings.TrimPrefix(rel, "/") }

func (s *simTarget) list(rel string) ([]entry, error) {
	n, err := s.w.Resolve(s.cred, rel)
	if err != nil {
		return nil, err
	}
	var ents []entry
	err = s.t.Readdir(n, 0, func(d kernfsim.Dirent) bool {
		ents = append(ents, entry{name: d.Name, dir: d.Kind == kernfsim.KindDir, file: d.Kind == kernfsim.KindAttr})
		return true
	})
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return ents, err
}

// write writes as root, as udev or an administrator would.
func (s *simTarget) write(rel string, data []byte) error {
	f, err := s.w.Open(kernfsim.RootCred, rel, os.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Release()
	_, err = f.Write(context.Background(), data)
	return err
}

// pathTarget is real system calls against a directory.
type pathTarget struct{ d *workload.Dir }

// newPathTarget checks that dir is a directory that answers.
func newPathTarget(dir string) (*pathTarget, error) {
	d, err := workload.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	return &pathTarget{d}, nil
}

func (p *pathTarget) readFile(path string, buf []byte) error { return p.d.ReadFile(path, buf) }
func (p *pathTarget) stat(path string) error                 { return p.d.Stat(path) }
func (p *pathTarget) readDir(path string, buf []byte) error  { return p.d.ReadDir(path, buf) }
func (p *pathTarget) abs(rel string) string                  { return p.d.Path(rel) }
func (p *pathTarget) write(rel string, data []byte) error    { return p.d.Write(rel, data) }

func (p *pathTarget) list(rel string) ([]entry, error) {
	des, err := p.d.Entries(rel)
	ents := make([]entry, 0, len(des))
	for _, d := range des {
		ents = append(ents, entry{name: d.Name(), dir: d.IsDir(), file: d.Type().IsRegular()})
	}
	return ents, err
}

// reader does one operation of a plan at a time on one path
// (workload.Worker).
type reader struct {
	w    *worker
	path string
}

func (r *reader) Do() error    { return r.w.do() }
func (r *reader) Path() string { return r.path }

var _ workload.WorkerSource = Workers

// Workers plans op on d as Run would (missing: the lookup of
// DefaultMissingPath) and returns n workers, each on its own file as the
// benchmark's would be, for a tool that runs them under its own schedule
// (workload.WorkerSource).
func Workers(d *workload.Dir, op workload.Op, missing bool, n int) ([]workload.Worker, error) {
	c := Config{Op: op, Missing: missing, Threads: n, Files: n}.withDefaults()
	t := &pathTarget{d}
	p, err := makePlan(t, c)
	if err != nil {
		return nil, err
	}
	ws := make([]workload.Worker, c.Threads)
	for i := range ws {
		ws[i] = &reader{w: newWorker(i, -1, 1, c.BufSize, t, p), path: planPath(p, i)}
	}
	return ws, nil
}

// planPath is the path worker i of p works on, for error reports.
func planPath(p *plan, i int) string {
	switch {
	case p.Missing != "":
		return p.Missing
	case len(p.Files) > 0:
		return p.Files[i%len(p.Files)]
	case len(p.Dirs) > 0:
		return p.Dirs[i%len(p.Dirs)]
	}
	return ""
}
