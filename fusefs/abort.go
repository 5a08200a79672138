package fusefs

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/fusectl"
	"github.com/kernfsim/kernfsim/internal/mountinfo"
)

// endBusy ends a mount that a plain unmount found busy (a client holds a
// file open or has its cwd inside, or another mount sits inside it): it
// aborts the FUSE connection, failing every request in flight and every
// later one on open files with ECONNABORTED or ENOTCONN, so the server
// stops, then detaches what is still mounted. It returns why the
// connection could not be aborted or the mount detached, or nil.
//
// The abort is umount2(MNT_FORCE), which makes the kernel call FUSE's
// umount_begin (fuse_abort_conn) before it checks for users, so it needs
// neither fusectl mounted on /sys/fs/fuse/connections nor a free mount.
// Where that is refused (no CAP_SYS_ADMIN) the connection's fusectl abort
// file is tried, if fusectl is mounted.
func (m *Mount) endBusy() error {
	err := unix.Unmount(m.Mountpoint, unix.MNT_FORCE)
	switch {
	case err == nil:
		return nil // aborted, and nothing held it any more
	case errors.Is(err, syscall.EBUSY):
		err = nil // aborted; still held
	default:
		err = m.abortFusectl(err)
	}
	if derr := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); derr != nil && !errors.Is(derr, syscall.EINVAL) {
		return fmt.Errorf("still mounted (umount -l: %v)", derr)
	}
	if err != nil {
		return fmt.Errorf("detached, but the connection could not be aborted (%v)", err)
	}
	return nil
}

// detachAsUser detaches a busy mount made through fusermount3 (a user
// cannot abort a connection: umount -f and fusectl need root) and says
// why the connection stays until this process exits, or returns the
// unmount's error if even detaching fails.
func (m *Mount) detachAsUser(unmountErr error) error {
	bin, err := exec.LookPath("fusermount3")
	if err == nil {
		err = exec.Command(bin, "-u", "-z", m.Mountpoint).Run()
	}
	if err != nil {
		return fmt.Errorf("still mounted (%v; fusermount3 -u -z: %v)", unmountErr, err)
	}
	return errors.New("detached, but a user cannot abort the connection (umount -f and fusectl need root)")
}

// abortFusectl writes the connection's abort file, after umount -f was
// refused with forceErr; it returns what stopped it, or nil.
func (m *Mount) abortFusectl(forceErr error) error {
	if m.conn == 0 {
		return fmt.Errorf("umount -f: %v; the connection's number is unknown", forceErr)
	}
	if err := fusectl.Abort(m.conn); err != nil {
		return fmt.Errorf("umount -f: %v; %v", forceErr, err)
	}
	return nil
}

// Submounts lists the mount points inside the mount (not the mount
// itself), from /proc/self/mountinfo: unmounting a busy mount detaches
// them with it.
func (m *Mount) Submounts() ([]string, error) {
	return mountinfo.Below(m.Mountpoint)
}

// abort aborts the mount's connection through fusectl and waits a
// bounded time for the server to stop; for a mount this server cannot
// reach by path any more.
func (m *Mount) abort() error {
	err := errors.New("the connection's number is unknown")
	if m.conn != 0 {
		err = fusectl.Abort(m.conn)
	}
	m.srv.WaitEnded(2 * time.Second)
	return err
}

// endCovered ends a mount that is no longer on top at its mountpoint
// (covered by another mount, or detached by someone else) without
// touching what is on top: it aborts this server's connection.
func (m *Mount) endCovered(present bool, cover mountinfo.Entry) error {
	err := m.abort()
	switch {
	case !present && err == nil:
		return nil // detached already; the abort ended its users
	case !present:
		return fmt.Errorf("unmount %s: the mount was detached by someone else, and its connection could not be aborted (%v): its clients keep it until they close", m.Mountpoint, err)
	case err != nil:
		return fmt.Errorf("unmount %s: another mount (%s) covers this server's; it was left in place, and this server's connection could not be aborted (%v)", m.Mountpoint, cover.FSType, err)
	}
	return fmt.Errorf("unmount %s: another mount (%s) covers this server's; it was left in place, this server's connection was aborted, and its dead mount stays beneath: once the other is unmounted, run umount %s", m.Mountpoint, cover.FSType, m.Mountpoint)
}
