package teardown

import "github.com/kernfsim/kernfsim/loadgen/harness"

// References are the seeds' figures a teardown storm reproduces.
var References = []harness.Reference{harness.Seed000}
