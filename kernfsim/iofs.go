package kernfsim

import (
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// FS returns an io/fs view of the tree as seen by c, resolved by a Walker:
// Open follows symlinks; Lstat and ReadLink do not follow a final one.
func (t *Tree) FS(c Cred) fs.FS {
	return &treeFS{w: NewWalker(t, WalkerOptions{Buckets: 1 << 10}), cred: c}
}

var (
	_ fs.StatFS     = (*treeFS)(nil)
	_ fs.ReadLinkFS = (*treeFS)(nil)
	_ fs.ReadDirFS  = (*treeFS)(nil)
)

type treeFS struct {
	w    *Walker
	cred Cred
}

func (f *treeFS) resolve(op, name string, follow bool) (*Node, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		name = ""
	}
	n, err := f.w.resolve(f.cred, name, follow)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err.(*fs.PathError).Err}
	}
	return n, nil
}

func (f *treeFS) Open(name string) (fs.File, error) {
	n, err := f.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	info := f.info(n, name)
	if n.kind == KindDir {
		return &dirFile{fsys: f, n: n, info: info}, nil
	}
	of, err := f.w.t.Open(n, os.O_RDONLY, f.cred)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err.(*fs.PathError).Err}
	}
	return &attrFile{f: of, info: info}, nil
}

func (f *treeFS) Stat(name string) (fs.FileInfo, error) {
	n, err := f.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	return f.info(n, name), nil
}

func (f *treeFS) Lstat(name string) (fs.FileInfo, error) {
	n, err := f.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return f.info(n, name), nil
}

func (f *treeFS) ReadLink(name string) (string, error) {
	n, err := f.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	if n.kind != KindSymlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return n.Target(), nil
}

func (f *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	file, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	d, ok := file.(*dirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	return d.ReadDir(-1)
}

// info describes n under the base name of path.
func (f *treeFS) info(n *Node, path string) fileInfo {
	name := path[strings.LastIndexByte(path, '/')+1:]
	if name == "" {
		name = "."
	}
	return fileInfo{name: name, st: f.w.t.Getattr(n)}
}

type fileInfo struct {
	name string
	st   Stat
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.st.Size }
func (i fileInfo) Mode() fs.FileMode  { return i.st.FileMode() }
func (i fileInfo) ModTime() time.Time { return i.st.Mtime }
func (i fileInfo) IsDir() bool        { return i.st.Kind == KindDir }
func (i fileInfo) Sys() any           { return i.st }

// Type, Info and String make a fileInfo a fs.DirEntry too.
func (i fileInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i fileInfo) Info() (fs.FileInfo, error) { return i, nil }
func (i fileInfo) String() string             { return fs.FormatDirEntry(i) }

// attrFile reads an attribute through a File: one snapshot per open.
type attrFile struct {
	f    *File
	info fileInfo
	off  int64
}

func (a *attrFile) Stat() (fs.FileInfo, error) { return a.info, nil }

// Close releases the File once: a second Close fails with fs.ErrClosed
// instead of handing the File back to the pool twice (and, under a
// strategy with open-file locks, taking a lock for a node it no longer
// has).
func (a *attrFile) Close() error {
	if a.f == nil {
		return &fs.PathError{Op: "close", Path: a.info.name, Err: fs.ErrClosed}
	}
	a.f.Release()
	a.f = nil
	return nil
}

func (a *attrFile) Read(p []byte) (int, error) {
	if a.f == nil {
		return 0, &fs.PathError{Op: "read", Path: a.info.name, Err: fs.ErrClosed}
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := a.f.Read(p, a.off)
	a.off += int64(n)
	return n, err
}

// dirFile lists a directory; entries are read once, at the first ReadDir,
// and returned in name order.
type dirFile struct {
	fsys    *treeFS
	n       *Node
	info    fileInfo
	entries []fs.DirEntry
	read    bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: syscall.EISDIR}
}

func (d *dirFile) ReadDir(count int) ([]fs.DirEntry, error) {
	if !d.read {
		d.read = true
		if err := d.load(); err != nil {
			return nil, err
		}
	}
	if count <= 0 {
		all := d.entries
		d.entries = nil
		return all, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	k := min(count, len(d.entries))
	out := d.entries[:k]
	d.entries = d.entries[k:]
	return out, nil
}

func (d *dirFile) load() error {
	t := d.fsys.w.t
	err := t.Readdir(d.n, 0, func(e Dirent) bool {
		if n, lerr := t.Lookup(d.n, e.Name); lerr == nil {
			d.entries = append(d.entries, fileInfo{name: e.Name, st: t.Getattr(n)})
		}
		return true
	})
	slices.SortFunc(d.entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return err
}
