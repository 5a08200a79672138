// Package soak runs a long soak of a kernfsim server (loadgen soak).
//
// Readers run every operation beside device churn and teardown storms,
// each lock mode on a server of its own. The soak fails on an unexpected
// errno, on RSS or goroutines that stay above their level after warm-up,
// and on a nodeid table that does not return to its baseline
// (TestSoakCheck). Run returns a Result; WriteSample, WriteMode and
// WriteSummary report it. The operations come through Config.Workers.
//
// Lock ordering. actor.mu is the only lock here, and it is a root:
//
//	actor.mu
//
// Each actor (a reader, the churner, the storms) has its own. The
// sampler takes them one at a time, and no call into the server or the
// mount is made under one.
package soak
