package fusefs

import (
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// primeNoPoll makes the kernel stop sending FUSE POLL on this connection
// before any client can. A Go program that opens a file on a FUSE mount
// registers it with its netpoller, and the runtime's epoll_ctl, a raw
// syscall that keeps its P, makes the kernel send POLL and wait for the
// answer. When that program is the server itself (tests, in-process
// clients), the answer needs a P that a stop-the-world may be waiting
// for: a deadlock. Answering one POLL with ENOSYS, from a goroutine whose
// epoll_ctl releases its P (a plain, not raw, syscall),
// sets the kernel's no_poll for good.
//
// Preconditions: no client has opened a file on the mount yet.
func primeNoPoll(tree *kernfsim.Tree, mnt string) {
	path, ok := firstAttr(tree, tree.Root(), "", 3)
	if !ok {
		return
	}
	fd, err := unix.Open(filepath.Join(mnt, path), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	defer unix.Close(ep)
	// Not unix.EpollCtl: it is a raw syscall, which would keep this
	// thread's P while the kernel waits for the answer.
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	unix.Syscall6(unix.SYS_EPOLL_CTL, uintptr(ep), unix.EPOLL_CTL_ADD, uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
}

// firstAttr finds a readable attribute within depth levels of dir.
func firstAttr(t *kernfsim.Tree, dir *kernfsim.Node, prefix string, depth int) (string, bool) {
	var found string
	var dirs []string
	t.Readdir(dir, 0, func(e kernfsim.Dirent) bool {
		switch e.Kind {
		case kernfsim.KindAttr:
			found = prefix + e.Name
			return false
		case kernfsim.KindDir:
			dirs = append(dirs, e.Name)
		}
		return true
	})
	if found != "" || depth == 0 {
		return found, found != ""
	}
	for _, d := range dirs {
		child, err := t.Lookup(dir, d)
		if err != nil {
			continue
		}
		if p, ok := firstAttr(t, child, prefix+d+"/", depth-1); ok {
			return p, true
		}
	}
	return "", false
}
