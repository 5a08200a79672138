package fusefs

import (
	"fmt"
	"strings"

	"github.com/kernfsim/kernfsim/internal/fusectl"
	"github.com/kernfsim/kernfsim/internal/mountinfo"
)

// otherMounts are the mount points, besides the mountpoint, of this
// mount's FUSE connection in this mount namespace (bind mounts of the
// mount or of a directory in it), from /proc/self/mountinfo. Unmounting
// the mountpoint leaves them serving: the connection ends with its last
// mount.
func (m *Mount) otherMounts() []string {
	table, err := mountinfo.Self()
	if err != nil || m.conn == 0 {
		return nil
	}
	var out []string
	for _, e := range table {
		if e.FUSE() && e.Minor == m.conn && e.Point != m.Mountpoint {
			out = append(out, e.Point)
		}
	}
	return out
}

// endBound ends a connection that other mounts (binds) kept after the
// mountpoint's own unmount: it aborts the connection through fusectl,
// so the server stops and those mounts answer ENOTCONN, and says so,
// naming them.
func (m *Mount) endBound(binds []string) error {
	names := strings.Join(binds, ", ")
	if err := m.abort(); err != nil {
		return fmt.Errorf("unmount %s: other mounts of its connection (bind mounts at %s) kept it serving after the unmount, and it could not be aborted (%v): umount them", m.Mountpoint, names, err)
	}
	return fmt.Errorf("unmount %s: other mounts of its connection (bind mounts at %s) kept it serving after the unmount; the connection was aborted through fusectl, so they now answer ENOTCONN: umount them", m.Mountpoint, names)
}

// endUnexplained ends a connection that outlived the mountpoint's unmount
// by 2 s with no other mount of it in sight (one in another mount
// namespace keeps it the same way): it aborts the connection through
// fusectl and says what happened.
func (m *Mount) endUnexplained() error {
	err := fusectl.Abort(m.conn)
	if m.conn == 0 || err != nil {
		return fmt.Errorf("unmount %s: the server did not stop within 2 s of the unmount (another mount of its connection, in another mount namespace, may keep it), and the connection could not be aborted (%v)", m.Mountpoint, err)
	}
	return fmt.Errorf("unmount %s: the server did not stop within 2 s of the unmount (another mount of its connection, in another mount namespace, may keep it); the connection was aborted through fusectl", m.Mountpoint)
}
