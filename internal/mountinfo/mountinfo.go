// Package mountinfo reads this process's mount table. It sits below fusefs
// and the test helpers, so both can ask whether a path is mounted.
package mountinfo

import (
	"bufio"
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

// FUSEMount is a FUSE mount in a mount table.
type FUSEMount struct {
	Conn  uint32 // the connection: /sys/fs/fuse/connections/<Conn>, the device's minor
	Point string // where it is mounted
}

// FUSE lists the FUSE mounts (fuse, fuse.NAME) in a mountinfo file's
// contents, in order. fuseblk is left out: its connection is named after
// the block device, not an anonymous device's minor.
func FUSE(mountinfo []byte) []FUSEMount {
	var out []FUSEMount
	for _, line := range strings.Split(string(mountinfo), "\n") {
		// ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(line, " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 1 {
			continue
		}
		if fs := tail[0]; fs != "fuse" && !strings.HasPrefix(fs, "fuse.") {
			continue
		}
		_, minor, ok := strings.Cut(fields[2], ":")
		n, err := strconv.ParseUint(minor, 10, 32)
		if !ok || err != nil {
			continue
		}
		out = append(out, FUSEMount{Conn: uint32(n), Point: unescapeMountinfo(fields[4])})
	}
	return out
}
