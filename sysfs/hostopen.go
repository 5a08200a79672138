package sysfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// How the host mirror opens what it lists, so that whoever can write the
// mirrored directory cannot make it read anything else: every entry is
// reached from a directory fd, never through a symlink, a magic link or a
// mount point, and the opened file is checked (device, inode, type)
// against what the listing described before anything is read from it.
// Proved by TestMirrorHostSwapRace.

// fileID is what a listing (lstat) said an entry is. The same device and
// inode is the same file for as long as it exists.
type fileID struct {
	dev, ino uint64
	typ      uint32 // S_IFMT bits
}

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: st.Dev, ino: st.Ino, typ: st.Mode & unix.S_IFMT}
}

// resolveBeneath keeps openat2 below its dirfd, on its filesystem, and
// off every symlink (the last component included: O_NOFOLLOW).
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// noOpenat2 is set once openat2 answered ENOSYS (kernels before 5.6):
// openBeneath then walks one component at a time. Tests set it to cover
// the walk.
var noOpenat2 atomic.Bool

// openBeneath opens rel (relative, no ".."), below dirfd, following no
// symlink and crossing no mount: a symlink anywhere on the way fails
// ELOOP (or ENOTDIR), a mount point EXDEV. flags get O_NOFOLLOW and
// O_CLOEXEC.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: resolveBeneath}
		fd, err := retry(func() (int, error) { return unix.Openat2(dirfd, rel, &how) })
		if err != unix.ENOSYS {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return walkBeneath(dirfd, rel, flags)
}

// walkBeneath is openBeneath without openat2: one O_NOFOLLOW openat per
// component, each checked to be on dirfd's filesystem.
func walkBeneath(dirfd int, rel string, flags int) (int, error) {
	var root unix.Stat_t
	if err := unix.Fstat(dirfd, &root); err != nil {
		return -1, err
	}
	parts := strings.Split(rel, "/")
	cur := dirfd
	for i, name := range parts {
		if name == "" || name == ".." {
			closeUnless(cur, dirfd)
			return -1, unix.EXDEV
		}
		f := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			f = flags
		}
		fd, err := retry(func() (int, error) { return unix.Openat(cur, name, f, 0) })
		closeUnless(cur, dirfd)
		if err != nil {
			return -1, err
		}
		cur = fd
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Dev != root.Dev {
			unix.Close(fd)
			return -1, orErrno(err, unix.EXDEV)
		}
	}
	return cur, nil
}

func closeUnless(fd, keep int) {
	if fd != keep {
		unix.Close(fd)
	}
}

func orErrno(err error, e unix.Errno) error {
	if err != nil {
		return err
	}
	return e
}

// retry calls open again on EINTR, and on EAGAIN (openat2 gives it when a
// rename raced its resolution) a few times.
func retry(open func() (int, error)) (int, error) {
	for tries := 0; ; tries++ {
		fd, err := open()
		if err == unix.EINTR || err == unix.EAGAIN && tries < 16 {
			continue
		}
		return fd, err
	}
}

// swapped reports whether an open's error means the entry is no longer of
// the type its listing said: a symlink (ELOOP; ENOTDIR for a directory
// opened with O_DIRECTORY), a socket (ENXIO) or a mount (EXDEV) there now.
func swapped(err error) bool {
	return err == unix.ELOOP || err == unix.ENOTDIR || err == unix.ENXIO || err == unix.EXDEV
}

// openChecked opens rel below dirfd (openBeneath) and checks that the
// open file is want; on a mismatch it closes it and reports changed.
func openChecked(dirfd int, rel string, flags int, want fileID) (fd int, changed bool, err error) {
	fd, err = openBeneath(dirfd, rel, flags)
	if err != nil {
		return -1, swapped(err), err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, false, err
	}
	if idOf(&st) != want {
		unix.Close(fd)
		return -1, true, unix.ESTALE
	}
	return fd, false, nil
}

// openRegular opens name in dir for reading if it is the regular file
// want. It first opens it O_PATH, which opens nothing (a FIFO, device or
// socket swapped in is never opened), checks that, then opens that very
// inode through /proc/self/fd. Without /proc it opens name O_NONBLOCK
// (a FIFO or device swapped in is then opened but never read, and a FIFO
// does not block) and checks that instead.
func openRegular(dirfd int, name string, want fileID) (fd int, changed bool, err error) {
	pfd, changed, err := openChecked(dirfd, name, unix.O_PATH, want)
	if err != nil {
		return -1, changed, err
	}
	fd, err = retry(func() (int, error) {
		return unix.Open(fmt.Sprintf("%s%d", procSelfFD, pfd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	})
	unix.Close(pfd)
	if err == unix.ENOENT { // no /proc
		return openNonblock(dirfd, name, want)
	}
	if err != nil {
		return -1, false, err
	}
	if !sameFile(fd, want) { // /proc is not what it should be
		unix.Close(fd)
		return -1, true, unix.ESTALE
	}
	return fd, false, nil
}

// openNonblock is openRegular without /proc.
func openNonblock(dirfd int, name string, want fileID) (fd int, changed bool, err error) {
	fd, changed, err = openChecked(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, want)
	if err != nil {
		return -1, changed, err
	}
	// Read as without the check: whether a regular file's reads block is
	// its filesystem's business (FUSE passes the flag on).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return -1, false, err
	}
	return fd, false, nil
}

// procSelfFD is where openRegular reopens an O_PATH fd; tests point it
// elsewhere to cover the fallback.
var procSelfFD = "/proc/self/fd/"

func sameFile(fd int, want fileID) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && idOf(&st) == want
}

// dirFD is an open host directory, shared by the scanner and the reads
// of its attributes (a read abandoned past its timeout keeps it open
// until it returns); the last release closes it.
type dirFD struct {
	fd   int
	refs atomic.Int32 // accessed atomically
}

func newDirFD(fd int) *dirFD {
	d := &dirFD{fd: fd}
	d.refs.Store(1)
	return d
}

func (d *dirFD) acquire() { d.refs.Add(1) }

func (d *dirFD) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

// readSymlink reads the target of the symlink name in dir, if it is
// still the one listed; on sysfs, where nothing can be swapped, by name.
func readSymlink(dir *dirFD, name string, want fileID, sysfs bool) (target string, changed bool, err error) {
	fd, base := dir.fd, name
	if !sysfs {
		if fd, changed, err = openChecked(dir.fd, name, unix.O_PATH, want); err != nil {
			return "", changed, err
		}
		defer unix.Close(fd)
		base = ""
	}
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, base, buf)
		if err != nil {
			return "", false, err
		}
		if n < size {
			return string(buf[:n]), false, nil
		}
	}
}

// dirent is one entry of a directory listing: its name, and its type as
// getdents gives it (unix.DT_REG and so on; DT_UNKNOWN where the
// filesystem does not say).
type dirent struct {
	name string
	typ  uint8
}

// listEntries is the entries of the open directory fd, "." and ".." left
// out.
func listEntries(fd int) ([]dirent, error) {
	buf := make([]byte, 16<<10)
	var ents []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return ents, nil
		}
		ents = parseDirents(buf[:n], ents)
	}
}

// parseDirents appends the linux_dirent64 records in b to ents: a 64-bit
// inode, a 64-bit offset, a 16-bit record length, a type byte, then the
// name, NUL-terminated.
func parseDirents(b []byte, ents []dirent) []dirent {
	const nameOff = 19
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			return ents
		}
		rec := b[:reclen]
		b = b[reclen:]
		if binary.NativeEndian.Uint64(rec[0:8]) == 0 { // a deleted entry
			continue
		}
		name := rec[nameOff:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if s := string(name); s != "." && s != ".." {
			ents = append(ents, dirent{name: s, typ: rec[18]})
		}
	}
	return ents
}
