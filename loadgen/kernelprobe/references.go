package kernelprobe

import "github.com/kernfsim/kernfsim/loadgen/reference"

// The seeds' figures beside the real kernel's (see References).
var (
	seed001 = reference.Reference{Seed: "001", Source: "Eric Chanudet, 2025, 6.15-rc1 PREEMPT_RT, rcu_normal_after_boot=1",
		Figure: "umount 24.6 ms; umount -l 25.6 ms -> 3.2 ms once the RCU sync of a lazy umount is deferred to a worker (queue_rcu_work)"}
	seed003 = reference.Reference{Seed: "003", Source: "Giuseppe Scrivano, 2020",
		Figure: "unshare(CLONE_NEWIPC) x1000: 8.05 s wall, 0.06 s system -> 0.03 s wall, 0.02 s system once free_ipc's synchronize_rcu() moved to a work queue"}
	seed004 = reference.Reference{Seed: "004", Source: "Mike Galbraith, 2012",
		Figure: "hackbench, 400 tasks: 2.6 s; each cloned with CLONE_NEWPID 11.6 s (51.5 s with NEWIPC, NEWNET, NEWUSER too) -> 2.7 s once rcu_barrier() left deactivate_super()"}

	umountStormReferences = []reference.Reference{reference.Seed000, seed001}
	unshareReferences     = []reference.Reference{seed003}
	unsharePIDReferences  = []reference.Reference{seed003, seed004}
)
