package kernfsim

import (
	"errors"
	"io/fs"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Errno is the errno err carries: the syscall.Errno inside it, ENOENT for
// fs.ErrNotExist, EACCES for fs.ErrPermission, EIO for anything else.
func Errno(err error) syscall.Errno {
	var e syscall.Errno
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	}
	return syscall.EIO
}

// enotsupp is the kernel's internal ENOTSUPP, which some sysfs reads leak
// to user space; it has no name in the C library.
const enotsupp syscall.Errno = 524

// ErrnoName is e's symbolic name ("ENOENT"): "success" for 0, "ENOTSUPP"
// for the kernel's internal 524, "errno N" for a number without a name.
func ErrnoName(e syscall.Errno) string {
	switch {
	case e == 0:
		return "success"
	case e == enotsupp:
		return "ENOTSUPP"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(e))
}

// Disconnected reports whether err says that the server behind a FUSE
// mount is gone: ENOTCONN (its /dev/fuse descriptor was closed), or
// ECONNABORTED (the connection was aborted, which is also what a killed
// server's io_uring queues leave behind).
func Disconnected(err error) bool {
	e := Errno(err)
	return err != nil && (e == syscall.ENOTCONN || e == syscall.ECONNABORTED)
}
