package workload

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// Dir is a directory read with the system calls the benchmark's workers
// make: no allocation per read, EINTR retried, the errno returned bare.
// Its methods are safe for concurrent use; each caller passes its own
// buffer.
type Dir struct{ dir string }

// OpenDir checks that dir is a directory that answers (a *ConfigError
// says why not, and how to recover a dead FUSE mount).
func OpenDir(dir string) (*Dir, error) {
	var st unix.Stat_t
	err := RetryEINTR(func() error { return unix.Stat(dir, &st) })
	switch {
	case kernfsim.Disconnected(err) || MountGone(dir):
		return nil, DeadMountError(dir)
	case err != nil:
		return nil, setting.NewError("Dir", "give an existing directory", "%s: %v", dir, err)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return nil, setting.NewError("Dir", "give a directory", "%s is not a directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{dir: abs}, nil
}

// MountGone reports whether a statfs of dir says its FUSE connection
// ended. (Not a stat: with an attribute timeout the kernel answers that
// from its cache long after the server died; statfs always reaches the
// server.)
func MountGone(dir string) bool {
	var st unix.Statfs_t
	return kernfsim.Disconnected(RetryEINTR(func() error { return unix.Statfs(dir, &st) }))
}

// DeadMountError is the error for a FUSE mount whose server has gone.
func DeadMountError(dir string) *setting.Error {
	return setting.NewError("Dir", "unmount it with 'umount -l "+dir+"' (or 'fusermount3 -uz "+dir+"') and start the server again",
		"%s: transport endpoint is not connected: the filesystem server behind this mount is gone", dir)
}

// RetryEINTR runs fn again while it fails with EINTR.
func RetryEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// Path is rel's absolute path; an absolute rel is returned as it is.
func (d *Dir) Path(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(d.dir, rel)
}

// ReadFile opens path read-only, reads len(buf) bytes at offset 0 and
// closes it.
func (d *Dir) ReadFile(path string, buf []byte) error {
	var fd int
	err := RetryEINTR(func() (err error) { fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0); return })
	if err != nil {
		return err
	}
	err = RetryEINTR(func() error { _, err := unix.Read(fd, buf); return err })
	unix.Close(fd)
	return err
}

// Stat is stat(2) of path, following symlinks.
func (d *Dir) Stat(path string) error {
	var st unix.Stat_t
	return RetryEINTR(func() error { return unix.Stat(path, &st) })
}

// ReadDir opens the directory path, reads every entry (getdents until the
// end, into buf) and closes it.
func (d *Dir) ReadDir(path string, buf []byte) error {
	var fd int
	err := RetryEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return
	})
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		var n int
		if err := RetryEINTR(func() (err error) { n, err = unix.Getdents(fd, buf); return }); err != nil || n == 0 {
			return err
		}
	}
}

// Entries lists directory rel, sorted by name.
func (d *Dir) Entries(rel string) ([]os.DirEntry, error) { return os.ReadDir(d.Path(rel)) }

// Names lists the names in directory rel, sorted.
func (d *Dir) Names(rel string) ([]string, error) {
	ents, err := d.Entries(rel)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

// Write writes data to rel in one write(2), as a control file takes it;
// the error is a *fs.PathError.
func (d *Dir) Write(rel string, data []byte) error {
	path := d.Path(rel)
	var fd int
	err := RetryEINTR(func() (err error) { fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0); return })
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := RetryEINTR(func() error { _, err := unix.Write(fd, data); return err }); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// Worker does one operation at a time on one path, as a benchmark worker
// does: for a tool that runs the benchmark's operations under its own
// schedule.
type Worker interface {
	// Do does the operation once; the error is the operation's.
	Do() error
	// Path is what the worker works on, for error reports.
	Path() string
}

// WorkerSource makes n workers of op on d, each on its own file as the
// benchmark's would be; missing makes op the lookup of a missing path.
// loadgen.Workers is one.
type WorkerSource func(d *Dir, op Op, missing bool, n int) ([]Worker, error)
