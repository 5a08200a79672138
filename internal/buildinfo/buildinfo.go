// Package buildinfo says which build of a command is running.
//
// It gives the version and VCS revision (debug.ReadBuildInfo), for
// --version and for the context every result records.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release, set with -ldflags "-X
// github.com/kernfsim/kernfsim/internal/buildinfo.version=v1.2.3"; when
// empty, the module version from the build info is used.
var version string

// Info is a build's identity.
type Info struct {
	Version  string // v1.2.3, or "devel" for a build from a source tree
	Revision string // the VCS commit, with "+dirty" when the tree was modified; "" when not stamped
	Time     string // the commit's time (RFC 3339); "" when not stamped
	Go       string // the toolchain: go1.26.0
}

// Read returns the running program's build.
func Read() Info {
	i := Info{Version: version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i.withDefaults()
	}
	if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && i.Revision != "" {
		i.Revision += "+dirty"
	}
	return i.withDefaults()
}

func (i Info) withDefaults() Info {
	if i.Version == "" {
		i.Version = "devel"
	}
	return i
}

// String is the build in one line: "v1.2.3 (rev 0123abcd4567, go1.26.0)";
// a build without VCS stamping (go run, -buildvcs=false) says so and how
// to get one.
func (i Info) String() string {
	rev := "revision unknown: not stamped (go build or go run -buildvcs=true stamps it)"
	if i.Revision != "" {
		rev = "rev " + i.Revision
	}
	return fmt.Sprintf("%s (%s, %s)", i.Version, rev, i.Go)
}
