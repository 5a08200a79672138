package uring

// What the package's external tests reach inside for.

import "golang.org/x/sys/unix"

// RingFD is queue q's io_uring descriptor, for a test to break.
func RingFD(s *Server, q int) int { return s.rings.queues[q].ringFD }

// EnterFromOutside enters queue q's ring by its fd to get completions,
// from the calling thread, which is not the queue's. The kernel answers
// EEXIST for a ring with deferred task work (only its own thread may
// wait on it), and returns at once for any other.
func EnterFromOutside(s *Server, q int) error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(s.rings.queues[q].ringFD), 0, 0, enterGetEvents, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Conn is the connection number the server aborts by.
func Conn(s *Server) uint32 { return s.conn }

// SetRegisterRingFD sets whether queue threads register their ring's fd
// (see registerRingFD) and returns a function that restores it.
func SetRegisterRingFD(on bool) (restore func()) {
	old := registerRingFD
	registerRingFD = on
	return func() { registerRingFD = old }
}

// SetRegisterShortfall makes every REGISTER hand over n bytes less
// payload than the kernel requires, so that it refuses the queues.
func SetRegisterShortfall(n int) { registerShortfall = n }

// Abort aborts the server's connection, as a queue's failure does.
func Abort(s *Server) error { return abortConn(s.conn, s.mnt) }

// RequestBytes is what go-fuse counts per request against
// MountOptions.MaxInflightRequestBytes, for s's go-fuse Server.
func RequestBytes(s *Server) int { return requestBytes(s.Server) }

// StopQueues ends every queue thread now, as WaitEnded does past its
// bound.
func StopQueues(s *Server) { s.stopQueues() }
