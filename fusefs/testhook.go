package fusefs

import (
	"os"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// HoldReaddirEnv names an environment variable for end-to-end tests:
// while it holds a directory's path from the tree's root (say
// devices/kernfsim), every READDIR of that directory waits until its
// client is interrupted, so that a test can keep the directory's i_rwsem
// held shared by a client (the kernel holds it across READDIR) for as
// long as it needs: tests.TestKillDuringNotifierStall. Unset, it costs a
// READDIR one comparison.
const HoldReaddirEnv = "KERNFSIM_TEST_HOLD_READDIR"

// holdReaddir is HoldReaddirEnv's value at start; "" for none.
var holdReaddir = os.Getenv(HoldReaddirEnv)

// holdIfAsked waits until cancel (the request's interrupt) if dir is the
// directory HoldReaddirEnv names.
func holdIfAsked(cancel <-chan struct{}, dir *kernfsim.Node) {
	if holdReaddir != "" && dir.Path() == holdReaddir {
		<-cancel
	}
}
