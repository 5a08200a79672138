// Package meminfo reads what the kernel says of memory in /proc/meminfo.
package meminfo

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Available is MemAvailable from /proc/meminfo in bytes, or 0 if it
// cannot be read.
func Available() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
