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
// mount is gone. This is the one rule for every dead-server check. The
// kernel gives three errnos:
//   - ENOTCONN: the connection has ended (its /dev/fuse descriptor was
//     closed, or it was aborted); every request made after that gets it.
//   - ECONNABORTED: a request the connection's abort found on a ring
//     entry, or an io_uring connection aborted through fusectl.
//   - ECANCELED: a request that was being handed to a killed server's
//     io_uring queue as the queue's task died (seen in tests after
//     kill -9; the kernel cancels the ring command and the request).
func Disconnected(err error) bool {
	if err == nil {
		return false
	}
	switch Errno(err) {
	case syscall.ENOTCONN, syscall.ECONNABORTED, syscall.ECANCELED:
		return true
	}
	return false
}
