// Package soak runs a long soak of a kernfsim server (loadgen soak).
//
// Readers run every operation beside device churn and teardown storms.
// Each lock mode runs in turn, on a server of its own. The soak checks
// three things: no unexpected errno, the server's RSS and goroutines end
// near their level after warm-up, and the nodeid table returns to its
// baseline once the kernel forgets (TestSoakCheck). Run measures a
// Config and returns a Result; WriteSample, WriteMode and WriteSummary
// report it. The benchmark's operations come through Config.Workers
// (loadgen.Workers).
//
// Lock ordering. actor.mu is the only lock here, and it is a root:
//
//	actor.mu
//
// Each actor (a reader, the churner, the storms) has its own actor.mu. It
// protects the actor's interval histogram, operation count and error
// tally. The sampler takes each actor's in turn to drain it, never two at
// once. No call into the server or the mount is made under it.
package soak
