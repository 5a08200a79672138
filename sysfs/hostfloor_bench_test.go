package sysfs

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// BenchmarkMirrorHostFloor is what BenchmarkMirrorHost cannot go below:
// the same walk of /sys making only the system calls the mirror needs
// (per directory an open, fstat and listing; per attribute an open,
// fstat, read and close; an lstat per other entry, a readlink per
// symlink), on one goroutine, keeping nothing. Like the mirror it reads
// nothing on DefaultMirrorNoRead (a read of zram-control/hot_add makes a
// zram device). Its cpu-ns/entry is the
// kernel's share of a mirror; over two CPUs a mirror's wall time per
// entry is at best half of it.
func BenchmarkMirrorHostFloor(b *testing.B) {
	if _, err := os.Stat("/sys/devices"); err != nil {
		b.Skipf("no /sys: %v", err)
	}
	var entries int64
	buf := make([]byte, kernfsim.PageSize+1)
	cpu0 := cpuTime(b)
	start := time.Now()
	for b.Loop() {
		root, err := unix.Open("/sys", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		entries += floorWalk(root, "", buf)
	}
	reportPerEntry(b, entries, start, cpu0)
}

// floorWalk visits the open directory dir (rel below /sys) and
// everything below it on its filesystem, closes dir, and returns how many
// entries it saw.
func floorWalk(dir int, rel string, buf []byte) (n int64) {
	defer unix.Close(dir)
	var st unix.Stat_t
	if unix.Fstat(dir, &st) != nil {
		return 0
	}
	dev := st.Dev
	ents, err := listEntries(dir)
	if err != nil {
		return 0
	}
	for _, e := range ents {
		n++
		switch e.typ {
		case unix.DT_REG:
			if onNoRead(DefaultMirrorNoRead, rel, e.name) {
				unix.Fstatat(dir, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
				continue
			}
			fd, err := unix.Openat(dir, e.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				unix.Fstatat(dir, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
				continue
			}
			if unix.Fstat(fd, &st) == nil && st.Mode&0o444 != 0 {
				unix.Read(fd, buf)
			}
			unix.Close(fd)
		case unix.DT_DIR:
			if unix.Fstatat(dir, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Dev != dev {
				continue
			}
			if fd, err := unix.Openat(dir, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				n += floorWalk(fd, joinSynthPath(rel, e.name), buf)
			}
		case unix.DT_LNK:
			unix.Fstatat(dir, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
			unix.Readlinkat(dir, e.name, buf)
		default:
			unix.Fstatat(dir, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
	}
	return n
}
