// Package kernelprobe runs the seeds' reproductions on the real kernel, not on kernfsim.
//
// They are an umount storm (seeds 000, 001) and repeated unshare (003,
// 004). Each runs in a child process (Config.Command re-executes loadgen,
// which calls Serve), so no namespace or mount it makes reaches the host.
// Run starts it; Write, WriteJSON and WriteBench report the Result.
//
// Concurrency. kernelprobe has no lock. Run owns its child, whose loop
// runs on one locked OS thread and stops on SIGTERM or SIGINT through an
// atomic flag.
package kernelprobe
