// Package kernelprobe runs the seeds' reproductions on the real kernel, not on kernfsim.
//
// They are an umount storm (seeds 000, 001; loadgen umount-storm) and
// repeated unshare (003, 004; loadgen unshare). Each runs in a child
// process (Config.Command re-executes loadgen, which calls Serve), so no
// namespace or mount it makes can reach loadgen or the host; Run starts
// it, and Write, WriteJSON and WriteBench report the Result.
//
// Concurrency. kernelprobe has no lock. Run owns its child. The child's
// loop runs on one locked OS thread. SIGTERM or SIGINT stops it through an
// atomic flag. Nothing is shared between calls.
package kernelprobe
