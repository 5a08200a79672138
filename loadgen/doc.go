// Package loadgen reproduces the sysfs path-walk benchmarks of the kernfs locking work.
//
// They are Fox Chen's sysfs_benchmark, as Ian Kent ran it for "kernfs:
// proposed locking and concurrency improvement". Compare puts kernfsim's
// lock strategies side by side.
//
// It is a library: Run(ctx, Config) measures one configuration and returns
// a Result; Compare runs a grid of them; the reporters (WriteSeed,
// WriteJSON, WriteBench, WriteCompareTable, ...) are functions of an
// io.Writer and a result, and package plot draws a comparison. Nothing
// here parses flags, exits or prints on its own: cmd/loadgen maps a
// *setting.Error's Field to its flag.
//
// A run has two phases, as the original program: a single worker does
// Times operations, then Threads workers do Times operations each at once
// (with a MinDuration, each phase also lasts at least that long: its
// workers go on past Times until then). Workers are goroutines locked to
// their OS thread (or separate processes, Config.Procs). As in the
// original, the concur phase's worker i is pinned with sched_setaffinity
// to CPU i mod ncpus (unless NoPin) and the single worker is not (unless
// PinSingle). They wait at a start barrier, then time their own loop on
// the monotonic clock, one clock read per operation, recording each
// operation's latency in a per-worker HdrHistogram.
//
// The tools beside the benchmark (soak, teardown, kernelprobe) do not
// import this package. What they share with it has a package each:
// targets, serverproc, workload, latency, errtally and provenance.
// Workers hands soak the benchmark's operations. The control-file
// protocol and the stats file's parser are package client's.
//
// Targets: the in-process kernfsim walker (TargetSim), real system calls
// against any directory (TargetPath: /sys, tmpfs, a kernfsim mount), or a
// kernfsim FUSE server that Run starts in a separate process on a
// temporary mountpoint (TargetKernfsim, see StartServer).
//
// Lock ordering (outer to inner). loadgen holds no lock across a call
// into a target. It takes no lock inside another, so each lock is a root:
//
//	writerSet.mu
//	fdTable.mu
//
// writerSet.mu protects the writers' counters, error tally and latency
// histograms. Each writer takes it after each change. A phase takes it to
// open and close its window on them. Result assembly takes it after the
// writers stopped.
//
// fdTable.mu protects a sim's descriptor bitmap and its next free
// descriptor (the kernel's files_struct.file_lock). A worker's operation
// takes it before and after its walk, never during it.
//
// A writer's changer (deviceChurn, prober, cgroupChurn) has no lock. It
// keeps per-writer state that only that writer touches. Everything else a
// worker touches during a phase is its own (its histogram, its error
// counts) or accessed atomically (its progress counter, the phase's stop
// flag). The collector reads it only after the worker has sent its
// result.
package loadgen
