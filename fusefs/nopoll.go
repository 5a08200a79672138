package fusefs

import (
	"path/filepath"
	"runtime"
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
// The prime runs with every signal blocked on its thread. A FUSE request
// that a signal interrupts before the server has read it fails with
// EINTR, and a POLL that fails so leaves no_poll unset; the runtime's
// preemption signal (SIGURG) arrives often enough under a busy garbage
// collector that an unprotected prime failed now and then, and the next
// os.Open on the mount deadlocked (a test binary hung in
// request_wait_answer under fuse_file_poll, with the collector waiting
// for the P of that thread).
//
// Preconditions: no client has opened a file on the mount yet.
func primeNoPoll(tree *kernfsim.Tree, mnt string) {
	path, ok := firstAttr(tree, tree.Root(), "", 3)
	if !ok {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old) != nil {
		return
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)

	var fd int
	err := error(unix.EINTR)
	for err == unix.EINTR {
		fd, err = unix.Open(filepath.Join(mnt, path), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	}
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

// firstAttr finds an attribute anyone may open for reading within depth
// levels of dir. (A write-only one, such as bus/kernfsim/new_device, would
// refuse the prime's open even to root, as kernfs_fop_open does, and the
// prime would silently not happen.)
func firstAttr(t *kernfsim.Tree, dir *kernfsim.Node, prefix string, depth int) (string, bool) {
	var attrs, dirs []string
	t.Readdir(dir, 0, func(e kernfsim.Dirent) bool {
		switch e.Kind {
		case kernfsim.KindAttr:
			attrs = append(attrs, e.Name)
		case kernfsim.KindDir:
			dirs = append(dirs, e.Name)
		}
		return true
	})
	for _, a := range attrs {
		if n, err := t.Lookup(dir, a); err == nil && t.Getattr(n).Mode&0o444 == 0o444 {
			return prefix + a, true
		}
	}
	if depth == 0 {
		return "", false
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
