package teardown

import "github.com/kernfsim/kernfsim/loadgen/reference"

// References are the seeds' figures a teardown storm reproduces.
var References = []reference.Reference{reference.Seed000}
