package loadgen

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/kernfsim"
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

// sharedWrites reports whether t's operations make the kernel's shared
// writes outside kernfs's lock (Target.SimShared).
func (t Target) sharedWrites() bool { return t.Kind == TargetSim && (t.SimShared || t.SimCost > 0) }

// work is the operation's work outside the lock (Target.SimCost).
func (s *simTarget) work() {
	if s.spin > 0 {
		spinSink(spin(s.spin))
	}
}

// newSimTarget builds t's tree and walker for workers threads.
func newSimTarget(t Target, churn bool, workers int) (*simTarget, error) {
	tree, err := buildSimTree(t, churn)
	if err != nil {
		return nil, err
	}
	w := kernfsim.NewWalker(tree, kernfsim.WalkerOptions{RefWalk: t.sharedWrites(), MountDepth: sysMountDepth})
	st := &simTarget{t: tree, w: w, cred: DefaultSimCred, spin: spinIterations(t.SimCost)}
	if t.sharedWrites() {
		st.proc = newSimProcess(workers)
	}
	if t.Cred != nil {
		st.cred = *t.Cred
	}
	return st, nil
}

// buildSimTree is t's tree: t.Build's (which has the in-tree ABI), or the
// synthetic tree t.Tree sizes, with the ABI if abi (churn writes to it).
func buildSimTree(t Target, abi bool) (*kernfsim.Tree, error) {
	if t.Build != nil {
		return t.Build.BuildTree(t.Lock)
	}
	a, err := sysfs.Assemble(sysfs.Options{Lock: t.Lock, Synth: t.Tree.WithDefaults(), ABI: abi})
	if err != nil {
		return nil, AssembleError(err)
	}
	return a.Tree, nil
}

// AssembleError is a *ConfigError for a tree sysfs.Assemble could not
// build: its Lock, or else its Tree.
func AssembleError(err error) error {
	if oe := (*sysfs.OptionError)(nil); errors.As(err, &oe) && oe.Option == "Lock" {
		return &ConfigError{Field: "Lock", Problem: err.Error()}
	}
	return &ConfigError{Field: "Tree", Problem: err.Error()}
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
type pathTarget struct{ dir string }

// newPathTarget checks that dir is a directory that answers.
func newPathTarget(dir string) (*pathTarget, error) {
	var st unix.Stat_t
	err := Retry(func() error { return unix.Stat(dir, &st) })
	switch {
	case kernfsim.Disconnected(err) || deadFS(dir):
		return nil, deadMount(dir)
	case err != nil:
		return nil, BadConfig("Dir", "give an existing directory", "%s: %v", dir, err)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return nil, BadConfig("Dir", "give a directory", "%s is not a directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &pathTarget{dir: abs}, nil
}

// deadFS reports whether a statfs of dir says its FUSE connection ended.
func deadFS(dir string) bool {
	var st unix.Statfs_t
	return kernfsim.Disconnected(Retry(func() error { return unix.Statfs(dir, &st) }))
}

// deadMount is the error for a FUSE mount whose server has gone.
func deadMount(dir string) *ConfigError {
	return BadConfig("Dir", "unmount it with 'umount -l "+dir+"' (or 'fusermount3 -uz "+dir+"') and start the server again",
		"%s: transport endpoint is not connected: the filesystem server behind this mount is gone", dir)
}

// Retry runs fn again while it fails with EINTR.
func Retry(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

func (p *pathTarget) readFile(path string, buf []byte) error {
	var fd int
	err := Retry(func() (err error) { fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0); return })
	if err != nil {
		return err
	}
	err = Retry(func() error { _, err := unix.Read(fd, buf); return err })
	unix.Close(fd)
	return err
}

func (p *pathTarget) stat(path string) error {
	var st unix.Stat_t
	return Retry(func() error { return unix.Stat(path, &st) })
}

func (p *pathTarget) readDir(path string, buf []byte) error {
	var fd int
	err := Retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return
	})
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		var n int
		if err := Retry(func() (err error) { n, err = unix.Getdents(fd, buf); return }); err != nil || n == 0 {
			return err
		}
	}
}

func (p *pathTarget) abs(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(p.dir, rel)
}

func (p *pathTarget) list(rel string) ([]entry, error) {
	des, err := os.ReadDir(p.abs(rel))
	ents := make([]entry, 0, len(des))
	for _, d := range des {
		ents = append(ents, entry{name: d.Name(), dir: d.IsDir(), file: d.Type().IsRegular()})
	}
	return ents, err
}

func (p *pathTarget) write(rel string, data []byte) error {
	path := p.abs(rel)
	var fd int
	err := Retry(func() (err error) { fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0); return })
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := Retry(func() error { _, err := unix.Write(fd, data); return err }); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// Dir is a directory read with the system calls the benchmark's workers
// make (no allocation per read, EINTR retried), for loadgen's tools.
type Dir struct{ p *pathTarget }

// OpenDir checks that dir is a directory that answers (a *ConfigError
// says why not, and how to recover a dead FUSE mount).
func OpenDir(dir string) (*Dir, error) {
	p, err := newPathTarget(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{p}, nil
}

// Path is rel's absolute path; an absolute rel is returned as it is.
func (d *Dir) Path(rel string) string { return d.p.abs(rel) }

// ReadFile opens path, reads it once into buf and closes it; the errno is
// returned bare.
func (d *Dir) ReadFile(path string, buf []byte) error { return d.p.readFile(path, buf) }

// Names lists the names in directory rel.
func (d *Dir) Names(rel string) ([]string, error) {
	ents, err := d.p.list(rel)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.name
	}
	return names, err
}

// Stat stats path; the errno is returned bare.
func (d *Dir) Stat(path string) error { return d.p.stat(path) }

// ReadDir lists directory path once into buf (getdents); the errno is
// returned bare.
func (d *Dir) ReadDir(path string, buf []byte) error { return d.p.readDir(path, buf) }

// Write writes data to rel in one write(2), as a control file takes it.
func (d *Dir) Write(rel string, data []byte) error { return d.p.write(rel, data) }

// Worker does one operation of a plan at a time, as a benchmark worker
// does, on one path: for a tool that runs the benchmark's operations
// under its own schedule.
type Worker struct {
	w    *worker
	path string
}

// Do does the operation once; the error is the operation's.
func (w *Worker) Do() error { return w.w.do() }

// Path is what the worker works on, for error reports.
func (w *Worker) Path() string { return w.path }

// Workers plans c's operation on d (c.Op, c.Missing, c.Files) and returns
// c.Threads workers, each on its own file as the benchmark's would be.
func (d *Dir) Workers(c Config) ([]*Worker, error) {
	c = c.withDefaults()
	p, err := makePlan(d.p, c)
	if err != nil {
		return nil, err
	}
	ws := make([]*Worker, c.Threads)
	for i := range ws {
		ws[i] = &Worker{w: newWorker(i, -1, 1, c.BufSize, d.p, p), path: planPath(p, i)}
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
