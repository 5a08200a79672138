package uring

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// mountDirect mounts mnt on a /dev/fuse descriptor of its own, as
// go-fuse's direct mount does, and returns the descriptor. The rings
// need it: go-fuse does not hand out the descriptor of a mount it made.
func mountDirect(mnt string, o *fuse.MountOptions) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		return -1, fmt.Errorf("mount %s: %w", mnt, err)
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/fuse: %w", err)
	}
	source := o.FsName
	if source == "" {
		source = o.Name
	}
	flags, data := mountArgs(fd, st.Mode&unix.S_IFMT, o)
	if o.Debug {
		o.Logger.Printf("uring: mount(%q, %q, %q, %#x, %q)", source, mnt, "fuse."+o.Name, flags, data)
	}
	if err := unix.Mount(source, mnt, "fuse."+o.Name, flags, data); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mount(2): %w", err)
	}
	return fd, nil
}

// mountArgs are the mount(2) flags and data go-fuse's direct mount
// passes for o, for descriptor fd and a root of type rootMode.
func mountArgs(fd int, rootMode uint32, o *fuse.MountOptions) (uintptr, string) {
	data := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", rootMode),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", o.MaxWrite),
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if o.DirectMountFlags != 0 {
		flags = o.DirectMountFlags
	}
	bits := map[string]struct {
		set  bool
		flag uintptr
	}{
		"nodev": {true, unix.MS_NODEV}, "dev": {false, unix.MS_NODEV},
		"nosuid": {true, unix.MS_NOSUID}, "suid": {false, unix.MS_NOSUID},
		"noexec": {true, unix.MS_NOEXEC}, "exec": {false, unix.MS_NOEXEC},
	}
	defaultPermissions := false
	for _, opt := range o.Options {
		b, isFlag := bits[opt]
		switch {
		case isFlag && b.set:
			flags |= b.flag
		case isFlag:
			flags &^= b.flag
		default:
			data = append(data, opt)
			defaultPermissions = defaultPermissions || opt == "default_permissions"
		}
	}
	if o.AllowOther {
		data = append(data, "allow_other")
	}
	if o.IDMappedMount && !defaultPermissions {
		data = append(data, "default_permissions")
	}
	return flags, strings.Join(data, ",")
}

// connection is the number of the FUSE connection mounted at mnt (its
// device's minor, its directory in /sys/fs/fuse/connections), read from
// the kernel's cached attributes: the server, which has not answered
// INIT yet, is not asked.
func connection(mnt string) (uint32, error) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, mnt, unix.AT_STATX_DONT_SYNC|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &sx); err != nil {
		return 0, fmt.Errorf("statx %s: %w", mnt, err)
	}
	return sx.Dev_minor, nil
}

// fusectlDir is where the FUSE control file system is mounted.
const fusectlDir = "/sys/fs/fuse/connections"

// abortConn aborts FUSE connection conn, mounted at mnt: every request in
// flight fails with ECONNABORTED and every later one with ENOTCONN. It
// writes the connection's fusectl abort file (mounting fusectl where it
// is not), or else forces an unmount of mnt, which aborts the connection
// of the mount on top there (fuse's umount_begin).
func abortConn(conn uint32, mnt string) error {
	err := errors.New("its number is unknown")
	if conn != 0 {
		path := fmt.Sprintf("%s/%d/abort", fusectlDir, conn)
		if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
			unix.Mount("fusectl", fusectlDir, "fusectl", 0, "") // EBUSY: mounted meanwhile
		}
		if err = os.WriteFile(path, []byte("1"), 0); err == nil {
			return nil
		}
	}
	if ferr := unix.Unmount(mnt, unix.MNT_FORCE); ferr != nil && !errors.Is(ferr, unix.EBUSY) {
		return fmt.Errorf("abort FUSE connection %d: %v; umount -f %s: %v", conn, err, mnt, ferr)
	}
	return nil
}

// unmountTries and the doubling delay between them are go-fuse's: the
// kernel may not yet know that every file on the mount was closed.
const unmountTries = 5

// unmount unmounts mnt as go-fuse's direct mount does.
func unmount(mnt string) (err error) {
	delay := time.Duration(0)
	for range unmountTries {
		if err = unix.Unmount(mnt, 0); err == nil {
			return nil
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	return fmt.Errorf("unmount %s: %w", mnt, err)
}
