package fusefs

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// status maps an error from the tree to the errno the kernel gets. It is
// the only place fusefs turns errors into errnos.
func status(err error) fuse.Status {
	var errno syscall.Errno
	switch {
	case err == nil:
		return fuse.OK
	case errors.Is(err, kernfsim.ErrGroupsNeeded):
		return fuse.EACCES // a check that skipped withGroups: refuse, never send the kernel an errno it rejects
	case errors.As(err, &errno):
		return fuse.Status(errno)
	case errors.Is(err, locking.ErrReadOnly):
		return fuse.EROFS
	case errors.Is(err, fs.ErrNotExist):
		return fuse.ENOENT
	case errors.Is(err, fs.ErrPermission):
		return fuse.EACCES
	case errors.Is(err, fs.ErrExist):
		return fuse.Status(syscall.EEXIST)
	case errors.Is(err, fs.ErrInvalid):
		return fuse.EINVAL
	}
	return fuse.EIO
}
