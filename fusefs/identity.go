package fusefs

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/mountinfo"
)

// identifyWait bounds how long identify waits for a mount stacked on this
// one by a server started at the same moment to unmount itself.
const identifyWait = 2 * time.Second

// identify learns the mount's FUSE connection (m.conn): the device of
// the mountpoint, once a stat of it has reached this server. A stat that
// another server answered means a mount on top of this one (two servers
// started on one directory at once: CheckMountpoint and mount(2) are not
// atomic); that server finds itself stacked and unmounts (see stacked),
// so identify tries again for a while.
func (m *Mount) identify() error {
	deadline := time.Now().Add(identifyWait)
	for {
		before := m.Server.stats.Requests()[opGetattr]
		var st unix.Stat_t
		err := unix.Stat(m.Mountpoint, &st)
		if err == nil && m.Server.stats.Requests()[opGetattr] > before {
			m.conn = unix.Minor(st.Dev)
			return nil
		}
		if time.Now().After(deadline) {
			return usage("mountpoint %s: another mount covers this server's (stat: %v): mount on a directory no other server uses", m.Mountpoint, err)
		}
		time.Sleep(10 * time.Millisecond) // polling another server's unmount, bounded by identifyWait
	}
}

// Conn is the mount's FUSE connection: /sys/fs/fuse/connections/<Conn>,
// the minor of its device.
func (m *Mount) Conn() uint32 { return m.conn }

// stacked reports whether this mount sits on another mount at the same
// mountpoint, which CheckMountpoint would have refused: another server
// mounted there between the check and this mount.
func (m *Mount) stacked() (bool, error) {
	table, err := mountinfo.Self()
	if err != nil {
		return false, err
	}
	ours, ok := m.entry(table)
	if !ok {
		return false, fmt.Errorf("mountpoint %s: this server's mount (connection %d) is not in the mount table", m.Mountpoint, m.conn)
	}
	for _, e := range table {
		if e.ID == ours.Parent && e.Point == m.Mountpoint {
			return true, nil
		}
	}
	return false, nil
}

// entry is this mount's line in table.
func (m *Mount) entry(table []mountinfo.Entry) (mountinfo.Entry, bool) {
	for _, e := range table {
		if e.FUSE() && e.Minor == m.conn && e.Point == m.Mountpoint {
			return e, true
		}
	}
	return mountinfo.Entry{}, false
}

// onTop says where this mount stands at its mountpoint: on top (an
// unmount by path reaches it), covered by another mount (an unmount by
// path would remove that one), or gone from the table (detached).
func (m *Mount) onTop() (top bool, present bool, cover mountinfo.Entry) {
	table, err := mountinfo.Self()
	if err != nil || m.conn == 0 {
		return true, true, mountinfo.Entry{} // cannot tell: as before, by path
	}
	if _, ok := m.entry(table); !ok {
		return false, false, mountinfo.Entry{}
	}
	t, _ := mountinfo.Top(table, m.Mountpoint)
	if t.FUSE() && t.Minor == m.conn {
		return true, true, mountinfo.Entry{}
	}
	return false, true, t
}
