// Package kernelprobe runs the seeds' reproductions on the real kernel,
// not on kernfsim: an umount storm (seeds 000, 001; loadgen umount-storm)
// and repeated unshare (003, 004; loadgen unshare). Each runs in a child
// process (Config.Command re-executes loadgen, which calls Serve), so no
// namespace or mount it makes can reach loadgen or the host; Run starts
// it, and Write, WriteJSON and WriteBench report the Result.
//
// Concurrency: Run owns its child; the child's loop runs on one locked OS
// thread, stopped through an atomic flag by SIGTERM or SIGINT. Nothing is
// shared between calls.
package kernelprobe
