package loadgen

// Reference is a figure a seed thread published, printed beside ours.
type Reference struct {
	Seed   string `json:"seed"`   // the seed file's number
	Source string `json:"source"` // who measured, when, on what
	Figure string `json:"figure"`
}

func (r Reference) String() string { return "seed " + r.Seed + " (" + r.Source + "): " + r.Figure }

// The seeds' figures for each reproduction.
var (
	seed000 = Reference{"000", "NeilBrown, 2018, 4-CPU VM",
		"5000 tmpfs umounts took 100 s with synchronize_rcu() in each, 0.6 s with synchronize_rcu_expedited(); " +
			"mounting them took 8 s (a mount(8) process each); on 1 CPU 18 s and 36 s"}
	seed001 = Reference{"001", "Eric Chanudet, 2025, 6.15-rc1 PREEMPT_RT, rcu_normal_after_boot=1",
		"umount 24.6 ms; umount -l 25.6 ms -> 3.2 ms once the RCU sync of a lazy umount is deferred to a worker (queue_rcu_work)"}
	seed003 = Reference{"003", "Giuseppe Scrivano, 2020",
		"unshare(CLONE_NEWIPC) x1000: 8.05 s wall, 0.06 s system -> 0.03 s wall, 0.02 s system once free_ipc's synchronize_rcu() moved to a work queue"}
	seed004 = Reference{"004", "Mike Galbraith, 2012",
		"hackbench, 400 tasks: 2.6 s; each cloned with CLONE_NEWPID 11.6 s (51.5 s with NEWIPC, NEWNET, NEWUSER too) -> 2.7 s once rcu_barrier() left deactivate_super()"}

	TeardownReferences    = []Reference{seed000}
	UmountStormReferences = []Reference{seed000, seed001}
	UnshareReferences     = []Reference{seed003}
	UnsharePIDReferences  = []Reference{seed003, seed004}
)
