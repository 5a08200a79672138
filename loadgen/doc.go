// Package loadgen reproduces the sysfs path-walk benchmarks of the kernfs locking work.
//
// They are Fox Chen's sysfs_benchmark, as Ian Kent ran it for "kernfs:
// proposed locking and concurrency improvement". Run(ctx, Config)
// measures one configuration and Compare a grid of them; package report
// writes the results and package plot draws them. Nothing here parses
// flags, exits or prints. A run's phases, workers and targets are
// described in cmd/loadgen/README.md ("What a run does"); the packages
// beside this one, in docs/design.md ("Layout").
//
// Lock ordering. loadgen holds no lock across a call into a target and
// takes none inside another, so each lock is a root:
//
//	writerSet.mu  the writers' counters, error tally and histograms
//	fdTable.mu    a sim's descriptor bitmap (files_struct.file_lock)
//
// A writer's changer keeps state that only its writer touches. The rest
// of a worker's state is its own or accessed atomically, and the
// collector reads it only after the worker has sent its result.
package loadgen
