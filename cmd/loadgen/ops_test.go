package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen/report"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/sysfs"
)

// runJSON runs the command line with --format json and decodes the run.
func runJSON(t *testing.T, args ...string) report.JSONRun {
	t.Helper()
	code, out, errOut := runArgs(context.Background(), append(args, "--format", "json")...)
	var j report.JSONRun
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("%q: exit %d, stderr %q\n%s", args, code, errOut, out)
	}
	return j
}

// The tree flags are kernfsim's: --gp reaches the rcu tree of --sim
// (TestCompareHwloc has --sim rows on --tree host).
func TestTreeFlagsSim(t *testing.T) {
	j := runJSON(t, "--sim", "--lock", "rcu", "--gp", "deferred", "--churn", "2000", "--threads", "2", "--times", "500", "--cpus", "8")
	if j.Target.Tree != "synthetic tree of 8 CPUs" || j.Target.CPUs != 8 || j.Churn == nil || j.Churn.Adds == 0 || j.Unexpected != 0 {
		t.Errorf("target %+v, churn %+v, %d unexpected", j.Target, j.Churn, j.Unexpected)
	}
}

// addTreeFlags leaves --lock and the flags a command defines itself
// alone, and serverArgs passes on only the tree flags given.
func TestServerArgs(t *testing.T) {
	for _, ownGP := range []bool{false, true} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		if ownGP {
			fs.StringSlice("gp", nil, "the command's own list, as teardown's")
		}
		var f treeFlags
		addTreeFlags(fs, &f)
		require.NoError(t, fs.Parse([]string{"--gp", "expedited", "--cpus", "8", "--tree", "synthetic"}))
		want := "--cpus=8 --gp=expedited --tree=synthetic"
		if ownGP {
			want = "--cpus=8 --tree=synthetic"
		}
		if got := strings.Join(f.serverArgs(), " "); got != want || fs.Lookup("lock") != nil {
			t.Errorf("own --gp %v: server args %q, want %q; --lock defined: %v", ownGP, got, want, fs.Lookup("lock") != nil)
		}
		if c, d := f.config(), (sysfs.SynthConfig{}).WithDefaults(); c.CPUs != 8 || c.Sockets != d.Sockets || c.MemBlocks != d.MemBlocks {
			t.Errorf("config %+v, want CPUs 8 and the rest kernfsim's defaults", c)
		}
	}
}

// Against /sys and against a kernfsim mirror of it, one discovery reads
// the same files and looks up the same missing names (workers as
// processes: MPI ranks); the real lstopo reads the mirror too.
func TestMirrorMount(t *testing.T) {
	requireFUSE(t)
	s, err := serverproc.StartServer(context.Background(), serverproc.ServerConfig{Command: serverCommand(), Lock: "rcu",
		Args: []string{"--tree=host"}})
	require.NoError(t, err)
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		noLeftovers(t)
	}()
	sys := runJSON(t, "--path", "/sys", "--op", "hwloc", "--threads", "2", "--times", "1")
	mirror := runJSON(t, "--path", s.Mountpoint(), "--op", "hwloc", "--threads", "2", "--times", "1", "--procs")
	if mirror.Unexpected != 0 || len(mirror.Errors) != 0 || mirror.TimeToDone == nil || !mirror.Procs {
		t.Errorf("errors %+v, time to done %+v", mirror.Errors, mirror.TimeToDone)
	}
	if !slices.Equal(sys.Files, mirror.Files) {
		t.Errorf("the mirror's discovery differs from /sys's:\n%q\n%q", mirror.Files, sys.Files)
	}
	if _, err := exec.LookPath("lstopo"); err != nil {
		t.Skip("no lstopo:", err)
	}
	j := runJSON(t, "--path", s.Mountpoint(), "--op", "lstopo", "--threads", "1", "--times", "1")
	if j.Unexpected != 0 || j.TimeToDone == nil || j.TimeToDone.MedianNs <= 0 {
		t.Errorf("lstopo: errors %+v, time to done %+v", j.Errors, j.TimeToDone)
	}
}

// Coldplug over FUSE: the writer hot-adds blocks through the mount's
// probe file while the readers see no error; /sys gets readers only.
func TestColdplugMounts(t *testing.T) {
	requireFUSE(t)
	j := runJSON(t, "--op", "coldplug", "--cpus", "8", "--mem-blocks", "100", "--threads", "2", "--times", "30", "--churn", "200")
	if j.Churn == nil || j.Churn.Adds == 0 || j.Unexpected != 0 || len(j.Errors) != 0 || j.FilesPerOp != 5 {
		t.Errorf("writer %+v, errors %+v, %d files per op", j.Churn, j.Errors, j.FilesPerOp)
	}
	code, out, errOut := runArgs(context.Background(), "--path", "/sys", "--op", "coldplug", "--threads", "2", "--times", "100")
	if code != cli.ExitOK || !strings.Contains(out, "note:         no memory hot-add") || !strings.Contains(out, "errors:       none") {
		t.Errorf("/sys: exit %d, stderr %q\n%s", code, errOut, out)
	}
	noLeftovers(t)
}

// compare --op hwloc puts /sys beside its mirror, over FUSE and in
// process, in one run (under one lock here, to keep the test short).
func TestCompareHwloc(t *testing.T) {
	requireFUSE(t)
	args := []string{"compare", "--op", "hwloc", "--locks", "rcu", "--threads", "2", "--repeats", "1"}
	code, out, errOut := runArgs(context.Background(), append(args, "--format", "json")...)
	if code != cli.ExitOK || !strings.Contains(errOut, "serve a mirror of /sys") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var j report.JSONCompare
	if err := json.Unmarshal([]byte(out), &j); err != nil || len(j.Cells) != 3 {
		t.Fatalf("%v: %d cells, want 3 rows", err, len(j.Cells))
	}
	for _, c := range j.Cells {
		if c.Median.DoneNs <= 0 || c.Median.DoneMaxNs < c.Median.DoneNs || c.Median.Unexpected != 0 ||
			(c.Target.Kind == "sim" && c.Target.Tree != "mirror of /sys") {
			t.Errorf("cell %+v", c)
		}
	}
	code, out, _ = runArgs(context.Background(), append(args, "--targets", "sys")...)
	for _, want := range []string{"1 discoveries per worker", "op=hwloc", "median/last time to done", "\nsys host"} {
		if code != cli.ExitOK || !strings.Contains(spaces.ReplaceAllString(out, " "), want) {
			t.Errorf("exit %d: table lacks %q:\n%s", code, want, out)
		}
	}
	code, out, _ = runArgs(context.Background(), append(args, "--format", "bench", "--targets", "sys")...)
	if code != cli.ExitOK || strings.Count(out, "done-ns") != 1 || !regexp.MustCompile(`op=hwloc/threads=2-\d+ 2 `).MatchString(out) {
		t.Errorf("bench: exit %d:\n%s", code, out)
	}
	noLeftovers(t)
}

func TestCompareColdplug(t *testing.T) {
	requireSys(t)
	code, out, errOut := runArgs(context.Background(), "compare", "--op", "coldplug", "--targets", "sim,sys", "--locks", "rwsem",
		"--tree", "synthetic", "--cpus", "8", "--mem-blocks", "500", "--threads", "2", "--times", "50", "--repeats", "1")
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"op=coldplug", "coldplug: a 5th of that", "\nsim rwsem", "\nsys host", "sys: no memory hot-add"} {
		if !strings.Contains(spaces.ReplaceAllString(out, " "), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestFieldOpsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim", "--op", "lstopo"}, "lstopo reads a filesystem"},
		{[]string{"--sim", "--tree", "host", "--cpus", "8"}, "--cpus sizes a synthetic tree"},
		{[]string{"--sim", "--tree", "host:/does/not/exist"}, "host:/does/not/exist: no such file or directory"},
		{[]string{"--path", "/sys", "--op", "coldplug", "--churn", "10"}, "--churn: /sys is not a kernfsim tree"},
		{[]string{"--sim", "--gp", "sometimes"}, "valid values are normal, expedited, deferred"},
		{[]string{"compare", "--hwloc-times", "0"}, "--hwloc-times must be at least 1"},
		{[]string{"compare", "--write-rate", "10"}, "--write-rate paces the writers: give --writers N too"},
		{[]string{"compare", "--writers", "-1"}, "--writers must be 0 to 256"},
		{[]string{"compare", "--writers", "1", "--write-rate", "0"}, "--write-rate must be above 0"},
		{[]string{"--sim", "--writers", "-1"}, "--writers: -1 writers"},
		{[]string{"--sim", "--lock", "none", "--op", "cgroup", "--writers", "1"}, "--writers: lock strategy none refuses writers"},
		{[]string{"--path", "/sys", "--cgroups", "8"}, "--cgroups applies to --sim"},
		{[]string{"--sim", "--cgroups", "-1"}, "invalid value -1 for --cgroups"},
		{[]string{"--sim", "--tree", "host", "--cgroups", "8"}, "--cgroups sizes a synthetic tree"},
		{[]string{"--path", "/proc/self", "--op", "cgroup"}, "--op: cgroup needs a cgroup v2 hierarchy"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runArgs(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q (stdout %q): want exit 2 and %q", code, errOut, out, tc.want)
			}
		})
	}
}

// --op cgroup in process: the tree gets loadgen.DefaultCgroups containers
// unless --cgroups says otherwise, every cgroup's files read without
// error while the writers start and stop containers.
func TestCgroupSimFlags(t *testing.T) {
	args := []string{"--sim", "--op", "cgroup", "--cpus", "8", "--mem-blocks", "4", "--threads", "2", "--times", "50"}
	j := runJSON(t, append(args, "--writers", "2", "--churn", "1000", "--min-duration", "50ms")...)
	if j.Cgroups != 3+32+64 || j.FilesPerOp != 5 || j.Churn == nil || j.Churn.Writers != 2 || j.Churn.Latency == nil ||
		j.Concur.Writes == nil || j.Unexpected != 0 || len(j.Errors) != 0 {
		t.Errorf("cgroups %d, files per op %d, churn %+v, concur writes %+v, errors %+v", j.Cgroups, j.FilesPerOp, j.Churn, j.Concur.Writes, j.Errors)
	}
	if j := runJSON(t, append(args, "--cgroups", "4")...); j.Cgroups != 3+2+4 || j.Unexpected != 0 {
		t.Errorf("--cgroups 4: %d cgroups, %d unexpected: want 9, 0", j.Cgroups, j.Unexpected)
	}
	code, out, errOut := runArgs(context.Background(), args...)
	if code != cli.ExitOK || !strings.Contains(out, "cgroups:      100 cgroups/s asked through new_cgroup and delete_cgroup") ||
		!strings.Contains(out, "5 per cgroup (memory.stat cpu.stat io.stat cgroup.procs memory.current)") {
		t.Errorf("seed: exit %d, stderr %q\n%s", code, errOut, out)
	}
}

// --op cgroup over FUSE: the server loadgen starts serves the cgroups (it
// gets --cgroups too), and the writer makes and removes containers'
// cgroups through the mount's control files while the readers read.
func TestCgroupMount(t *testing.T) {
	requireFUSE(t)
	j := runJSON(t, "--op", "cgroup", "--cpus", "8", "--mem-blocks", "4", "--threads", "2", "--times", "50", "--min-duration", "100ms")
	if j.Cgroups != 99 || j.Churn == nil || j.Churn.Adds == 0 || len(j.Churn.Errors) != 0 || j.Unexpected != 0 || len(j.Errors) != 0 {
		t.Errorf("cgroups %d, churn %+v, errors %+v", j.Cgroups, j.Churn, j.Errors)
	}
	noLeftovers(t)
}

// compare --writers over FUSE and in process: every cell reports the
// writers' latency and the lock's write side, in cgroup cells too.
func TestCompareWritersMounts(t *testing.T) {
	requireFUSE(t)
	code, out, errOut := runArgs(context.Background(), "compare", "--ops", "files,cgroup", "--targets", "kernfsim,sim", "--locks", "rwsem",
		"--threads", "2", "--repeats", "1", "--writers", "1", "--write-rate", "500", "--min-duration", "100ms", "--warm-up", "0",
		"--cpus", "8", "--mem-blocks", "4", "--format", "json")
	var j report.JSONCompare
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &j) != nil || len(j.Cells) != 4 || j.Writers != 1 {
		t.Fatalf("exit %d, stderr %q, %d cells", code, errOut, len(j.Cells))
	}
	for _, c := range j.Cells {
		m := c.Median
		if m.Writers == nil || m.Writers.Changes == 0 || m.Writers.P50Ns <= 0 || m.Lock == nil || m.Lock.WriteAcquisitions == 0 || m.Unexpected != 0 {
			t.Errorf("cell %s %s: writers %+v, lock %+v, %d unexpected", c.Target.Kind, c.Op, m.Writers, m.Lock, m.Unexpected)
		}
	}
	noLeftovers(t)
}
