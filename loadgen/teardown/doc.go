// Package teardown runs teardown storms (loadgen teardown), the writer side of the seeds.
//
// A storm creates Count devices, removes them Batch at a time through
// the in-tree ABI, timing each call as its caller sees it, and waits
// until every teardown has completed. Run returns one Storm per lock and
// grace-period policy; Write, WriteJSON and WriteBench report it. How
// each target removes and sees completion is in cmd/loadgen/README.md
// ("teardown").
//
// Concurrency. teardown has no lock of its own. A storm's readers each
// run on a locked OS thread and own their histogram and error tally
// until the storm merges them; its counters are accessed atomically.
package teardown
