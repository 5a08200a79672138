// Package teardown runs teardown storms (loadgen teardown), the writer side of the seeds.
//
// The seeds' figures are References: seed 000's umount storm, a grace
// period per teardown against an expedited one.
// A storm creates Count devices, then removes them one call after another
// (Batch devices per call), timing each call as its caller sees it, and
// then waits until every teardown has completed.
//
// Removal goes through the in-tree ABI: sysfs.ABI.Delete in process
// (TargetSim: the tree API, no page limit on a batch), or one write(2) of
// the names to bus/kernfsim/delete_device on a mount, kept open for the
// whole storm. "Every teardown has completed" is tree.Barrier() in
// process; on a mount, loadgen polls kernel/kernfsim/stats every
// millisecond until tree.teardowns_completed has grown by two per device
// (sysfs.ABI.Delete removes a device's directory and its class symlink,
// each counted once), so until_complete is late by at most one poll (about
// 1 ms plus one read of the stats file).
//
// Run measures a Config and returns a Result with one Storm per lock and
// grace-period policy; Write, WriteJSON and WriteBench report it.
//
// Concurrency. teardown has no lock of its own. A storm's caller runs on
// one goroutine. Its readers (Config.Readers) each run on a locked OS
// thread. Each owns its histogram and error tally until the storm stops
// them and merges them. The storm's counters are accessed atomically.
package teardown
