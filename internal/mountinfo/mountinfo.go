// Package mountinfo answers what fusefs and the test tools ask of a mount table.
//
// github.com/moby/sys/mountinfo reads and parses the table. This package
// adds what it lacks: the mount on top at a point (Top) and the FUSE
// connection of each FUSE mount (FUSE). It never stats a mount point, so
// a stuck FUSE mount cannot block it.
package mountinfo

import (
	"bytes"
	"strings"

	moby "github.com/moby/sys/mountinfo"
)

// IsMountpoint reports whether mnt is a mount point in this thread's
// mount namespace. It reads the table, where moby's Mounted would stat
// mnt, which blocks on a stuck FUSE mount.
func IsMountpoint(mnt string) (bool, error) {
	ms, err := moby.GetMounts(moby.SingleEntryFilter(mnt))
	return len(ms) > 0, err
}

// Below lists the mount points strictly inside dir.
func Below(dir string) ([]string, error) {
	ms, err := moby.GetMounts(func(m *moby.Info) (skip, stop bool) {
		return !strings.HasPrefix(m.Mountpoint, dir+"/"), false
	})
	var subs []string
	for _, m := range ms {
		subs = append(subs, m.Mountpoint)
	}
	return subs, err
}

// Entry is one line of a mount table.
type Entry struct {
	ID, Parent   int    // this mount's ID and its parent's
	Major, Minor uint32 // the device
	Point        string // where it is mounted
	FSType       string // fuse.kernfsim, tmpfs, ...
}

// FUSE reports whether the entry is a FUSE mount whose connection is
// named by its device's minor (fuse, fuse.NAME; not fuseblk, whose
// connection is named after its block device).
func (e Entry) FUSE() bool { return e.FSType == "fuse" || strings.HasPrefix(e.FSType, "fuse.") }

// Parse parses a mountinfo file's contents. Malformed lines are skipped
// (TestParseSkipsMalformed).
func Parse(mountinfo []byte) []Entry {
	ms, err := moby.GetMountsFromReader(bytes.NewReader(mountinfo), nil)
	if err != nil { // moby stops at a malformed line: parse line by line
		ms = ms[:0]
		for line := range bytes.Lines(mountinfo) {
			if m, err := moby.GetMountsFromReader(bytes.NewReader(line), nil); err == nil {
				ms = append(ms, m...)
			}
		}
	}
	out := make([]Entry, 0, len(ms))
	for _, m := range ms {
		out = append(out, entryOf(m))
	}
	return out
}

func entryOf(m *moby.Info) Entry {
	return Entry{ID: m.ID, Parent: m.Parent, Major: uint32(m.Major), Minor: uint32(m.Minor), Point: m.Mountpoint, FSType: m.FSType}
}

// Self is this thread's mount table.
func Self() ([]Entry, error) {
	ms, err := moby.GetMounts(nil)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ms))
	for _, m := range ms {
		out = append(out, entryOf(m))
	}
	return out, nil
}

// Top is the mount on top at point (the one a path walk reaches), if any:
// the mount at point that no other mount at point sits on.
func Top(table []Entry, point string) (Entry, bool) {
	var top Entry
	found := false
	for _, e := range table {
		if e.Point == point && (!found || e.Parent == top.ID) {
			top, found = e, true
		}
	}
	return top, found
}

// FUSEMount is a FUSE mount in a mount table.
type FUSEMount struct {
	Conn  uint32 // the connection: /sys/fs/fuse/connections/<Conn>, the device's minor
	Point string // where it is mounted
}

// FUSE lists the FUSE mounts in a mountinfo file's contents, in order.
func FUSE(mountinfo []byte) []FUSEMount {
	var out []FUSEMount
	for _, e := range Parse(mountinfo) {
		if e.FUSE() {
			out = append(out, FUSEMount{Conn: e.Minor, Point: e.Point})
		}
	}
	return out
}
