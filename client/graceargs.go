package client

import "github.com/kernfsim/kernfsim/locking"

// GraceArgs are the server flags that set teardown policy gp and the
// grace-period engine g, for MountArgs' extra flags. The mount command's
// tree flags parse them back (cli.TestGraceArgs).
func GraceArgs(gp string, g locking.GraceConfig) []string {
	args := []string{"--gp=" + gp}
	if g.Tick > 0 {
		args = append(args, "--gp-tick="+g.Tick.String())
	}
	if g.ExpediteCost > 0 {
		args = append(args, "--expedite-cost="+g.ExpediteCost.String())
	}
	if g.ExpeditedIsNormal {
		args = append(args, "--rcu-normal")
	}
	return args
}
