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
