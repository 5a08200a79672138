// Package mountinfo reads this process's mount table. It sits below fusefs
// and the test helpers, so both can ask whether a path is mounted.
package mountinfo

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
)

// IsMountpoint reports whether mnt is a mount point in this mount
// namespace.
func IsMountpoint(mnt string) (bool, error) {
	found := false
	err := each(func(p string) bool { found = p == mnt; return !found })
	return found, err
}

// Below lists the mount points strictly inside dir.
func Below(dir string) ([]string, error) {
	var subs []string
	err := each(func(p string) bool {
		if strings.HasPrefix(p, dir+"/") {
			subs = append(subs, p)
		}
		return true
	})
	return subs, err
}

// each calls f with every mount point in /proc/self/mountinfo, in order,
// until f returns false.
func each(f func(mountpoint string) bool) error {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && !f(unescapeMountinfo(fields[4])) {
			return nil
		}
	}
	return sc.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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

// Parse parses a mountinfo file's contents; malformed lines are skipped.
func Parse(mountinfo []byte) []Entry {
	var out []Entry
	for _, line := range strings.Split(string(mountinfo), "\n") {
		// ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(line, " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 1 {
			continue
		}
		id, err1 := strconv.Atoi(fields[0])
		parent, err2 := strconv.Atoi(fields[1])
		major, minor, _ := strings.Cut(fields[2], ":")
		maj, err3 := strconv.ParseUint(major, 10, 32)
		min, err4 := strconv.ParseUint(minor, 10, 32)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			continue
		}
		out = append(out, Entry{ID: id, Parent: parent, Major: uint32(maj), Minor: uint32(min),
			Point: unescapeMountinfo(fields[4]), FSType: tail[0]})
	}
	return out
}

// Self is this process's mount table.
func Self() ([]Entry, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Parse(b), nil
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
