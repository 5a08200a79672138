package reference

// Reference is a figure a seed thread published, printed beside ours.
type Reference struct {
	Seed   string `json:"seed"`   // the seed file's number
	Source string `json:"source"` // who measured, when, on what
	Figure string `json:"figure"`
}

func (r Reference) String() string { return "seed " + r.Seed + " (" + r.Source + "): " + r.Figure }

// Seed000 is the figure two tools reproduce, teardown in kernfsim and
// kernelprobe on the real kernel; each tool's other references are its
// own.
var Seed000 = Reference{"000", "NeilBrown, 2018, 4-CPU VM",
	"5000 tmpfs umounts took 100 s with synchronize_rcu() in each, 0.6 s with synchronize_rcu_expedited(); " +
		"mounting them took 8 s (a mount(8) process each); on 1 CPU 18 s and 36 s"}
