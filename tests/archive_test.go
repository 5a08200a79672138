package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// gatherArchive runs hwloc-gather-topology on this machine, and returns
// its archive and the directory the archive unpacks to (by tar).
func gatherArchive(t *testing.T) (archive, unpacked string) {
	t.Helper()
	tool := testkit.RequireTool(t, "hwloc-gather-topology")
	testkit.RequireTool(t, "bzip2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, err := exec.CommandContext(ctx, tool, filepath.Join(dir, "mach")).CombinedOutput()
	require.NoError(t, err, "hwloc-gather-topology: %s", out)
	archive, unpacked = filepath.Join(dir, "mach.tar.bz2"), t.TempDir()
	out, err = exec.CommandContext(ctx, testkit.RequireTool(t, "tar"), "-x", "-p", "-f", archive, "-C", unpacked).CombinedOutput()
	require.NoError(t, err, "tar -x: %s", out)
	return archive, filepath.Join(unpacked, "mach")
}

// TestRealClientsArchive checks that lstopo (and find) print the same
// over a FUSE mount of hwloc-gather-topology's archive, served straight
// from the archive, as over the archive unpacked: HWLOC_FSROOT is the
// unpacked directory, its sys/ bound to the mount or left as unpacked.
func TestRealClientsArchive(t *testing.T) {
	archive, root := gatherArchive(t)
	tr := kernfsim.New(locking.MustNew("rcu"), kernfsim.Options{})
	rep, err := sysfs.LoadArchive(tr, archive, sysfs.ArchiveOptions{})
	require.NoError(t, err)
	t.Logf("%s", rep)
	tr.Seal()
	mnt := serveTree(t, tr)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"lstopo", []string{"HWLOC_FSROOT=" + root}, []string{"lstopo", "--of", "xml", "-"}},
		{"lstopo-text", []string{"HWLOC_FSROOT=" + root}, []string{"lstopo-no-graphics", "--of", "console", "-v"}},
		{"find", nil, []string{"sh", "-c", `cd "$0" && find sys -printf '%p %y %#m %l\n' | sort`, root}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.RequireTool(t, tc.args[0])
			want := gpIndex.ReplaceAllString(inSysroot(t, filepath.Join(root, "sys"), root, tc.env, tc.args...), "")
			got := gpIndex.ReplaceAllString(inSysroot(t, mnt, root, tc.env, tc.args...), "")
			if got != want {
				t.Errorf("%s differs on the archive's mount:\n%s", strings.Join(tc.args, " "), lineDiff(got, want))
			}
			if strings.Count(want, "\n") < 2 {
				t.Errorf("%s printed too little to compare: %q", strings.Join(tc.args, " "), want)
			}
		})
	}
}
