package uring

// What the package's external tests reach inside for.

// RingFD is queue q's io_uring descriptor, for a test to break.
func RingFD(s *Server, q int) int { return s.rings.queues[q].ringFD }

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
