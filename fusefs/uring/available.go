package uring

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// EnableParam is the fuse module parameter that allows FUSE-over-io_uring.
const EnableParam = "/sys/module/fuse/parameters/enable_uring"

// ErrUnavailable is wrapped by every error that says why a connection
// is not served over io_uring: Available's, FellBack's, and NewServer's
// with Config.Only URing.
var ErrUnavailable = errors.New("FUSE-over-io_uring is not available")

// ErrNotOffered is wrapped by every error Available returns: this kernel,
// its settings or this process's privileges rule io_uring out, whatever
// the Config. It wraps ErrUnavailable, and its text is the same.
var ErrNotOffered = fmt.Errorf("%w", ErrUnavailable)

// Available says whether this process can serve a new FUSE connection
// over io_uring, and if not, what to do about it. NewServer asks it first.
func Available() error {
	b, err := os.ReadFile(EnableParam)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: this kernel (%s) has no %s; it needs Linux 6.14 or later built with CONFIG_FUSE_IO_URING=y",
			ErrNotOffered, release(), EnableParam)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotOffered, err)
	}
	if v := strings.TrimSpace(string(b)); v != "Y" && v != "1" {
		return fmt.Errorf("%w: the fuse module has it switched off (%s is %s); as root, run: echo 1 > %s",
			ErrNotOffered, EnableParam, v, EnableParam)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil {
		switch strings.TrimSpace(string(b)) {
		case "2":
			return fmt.Errorf("%w: io_uring is disabled (kernel.io_uring_disabled=2); run: sysctl kernel.io_uring_disabled=0", ErrNotOffered)
		case "1":
			if os.Geteuid() != 0 {
				return fmt.Errorf("%w: io_uring is limited to privileged users (kernel.io_uring_disabled=1); run as root", ErrNotOffered)
			}
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: the server mounts the connection itself, which needs root (CAP_SYS_ADMIN); run as root", ErrNotOffered)
	}
	return nil
}

func release() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown release"
	}
	return unix.ByteSliceToString(u.Release[:])
}
