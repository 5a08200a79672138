package uring

import (
	"fmt"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// primeTries bounds how often the prime repeats a POLL whose answer was
// lost (the connection failing meanwhile); a signal cannot lose it, since
// the prime's thread blocks them all.
const primeTries = 20

// PrimeNoPoll makes the kernel stop sending FUSE POLL on the go-fuse
// mount at mountPoint before any client can, and checks that it did.
// Server.WaitMount calls it; a plain fuse.Server's WaitMount runs a
// weaker prime of go-fuse's own (unchecked, and lost to a signal).
//
// A Go program that opens a file on a FUSE mount registers it with its
// netpoller, and the runtime's epoll_ctl, a raw syscall that keeps its P,
// makes the kernel send POLL and wait for the answer. When that program is
// the server itself (tests, in-process clients), the answer needs a P that
// a stop-the-world may be waiting for: a deadlock, and a thread in
// request_wait_answer that not even SIGKILL ends.
//
// The prime opens the poll-hack file, which go-fuse and the queues answer
// in the root whatever the file system holds (PollHackName), and polls it
// with a plain syscall, which releases its P. The server answers ENOSYS
// and the kernel sets the connection's no_poll for good: from then on it
// answers every poll itself, with the default mask. The prime reads that
// answer: POLLIN means the kernel saw ENOSYS (or had no_poll already),
// POLLERR means the request failed and the POLL is sent again.
//
// The prime's thread blocks every signal: a FUSE request that a signal
// interrupts before the server has read it fails with EINTR and leaves
// no_poll unset, and the runtime's preemption signal (SIGURG) is frequent
// under a busy garbage collector.
//
// Preconditions: the mount is served, and no client in this process has
// opened a file on it yet.
func PrimeNoPoll(mountPoint string) error {
	if err := primeNoPoll(mountPoint); err != nil {
		return fmt.Errorf("the kernel would send FUSE POLL, which can deadlock a client in this process with the garbage collector: %w", err)
	}
	return nil
}

func primeNoPoll(mnt string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
		return fmt.Errorf("block signals: %w", err)
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)

	path := filepath.Join(mnt, PollHackName)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var revents int16
	for range primeTries {
		// unix.Poll is a plain syscall (ppoll), not a raw one.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, 0); err != nil && err != unix.EINTR {
			return fmt.Errorf("poll %s: %w", path, err)
		}
		revents = fds[0].Revents
		if revents&unix.POLLIN != 0 {
			return nil
		}
	}
	return fmt.Errorf("poll %s: the kernel's answer was %#x, not POLLIN, %d times", path, revents, primeTries)
}
