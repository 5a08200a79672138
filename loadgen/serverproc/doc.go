// Package serverproc starts a kernfsim server as a child process and reads its mount line.
//
// Lock ordering. Server.outMu is the only lock here, and it is a root:
//
//	Server.outMu
//
// Server.outMu protects a server's captured output. It is taken alone,
// never around another lock. A server's first line on stdout closes
// Server.said once outMu is released.
package serverproc
