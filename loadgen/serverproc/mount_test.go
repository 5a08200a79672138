package serverproc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

func TestParseMount(t *testing.T) {
	line := "kernfsim: serving synthetic tree of 8 CPUs on /tmp/m: lock=rcu gp=deferred tick=4ms entry-timeout=1s attr-timeout=0s negative-timeout=30s permissions=server"
	m := serverproc.ParseMount(line)
	want := serverproc.Mount{Lock: "rcu gp=deferred tick=4ms", Transport: serverproc.DefaultTransport, Permissions: "server",
		EntryTimeout: time.Second, NegativeTimeout: 30 * time.Second}
	if m == nil || *m != want {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	if m := serverproc.ParseMount(line + " transport=uring"); m == nil || m.Transport != "uring" {
		t.Errorf("transport=uring: got %+v", m)
	}
	if m := serverproc.ParseMount("kernfsim: mirror of /sys: 12 files left out"); m != nil {
		t.Errorf("not a status line: got %+v", m)
	}
	tgt := targets.Target{Kind: targets.TargetKernfsim, Lock: "rcu", Mount: m}
	if got := tgt.Describe(); got != "kernfsim lock=rcu gp=deferred tick=4ms transport=devfuse permissions=server entry-timeout=1s attr-timeout=0s negative-timeout=30s" {
		t.Errorf("Describe: %q", got)
	}
	for _, tc := range []struct {
		t    targets.Target
		want string
	}{{targets.Target{Kind: targets.TargetSim, Lock: "mutex"}, "sim lock=mutex transport=none permissions=walker sim=bare"},
		{targets.Target{Kind: targets.TargetSim, Lock: "rwsem", SimCost: 5 * time.Microsecond}, "sim lock=rwsem transport=none permissions=walker sim-cost=5µs shared"},
		{targets.Target{Kind: targets.TargetPath, Dir: "/sys"}, "sys transport=none"}} {
		if got := tc.t.Describe(); got != tc.want {
			t.Errorf("Describe: got %q, want %q", got, tc.want)
		}
	}
}

// TestParseMountNegatives: where the lock decides how missing names are
// cached, a row's header says its own rule and the rows' shared setup
// says only that the lock decides.
func TestParseMountNegatives(t *testing.T) {
	line := "kernfsim: serving synthetic tree of 8 CPUs on /tmp/m: lock=mutex entry-timeout=0s attr-timeout=0s negative-timeout=0s negatives=lock:uncached permissions=server transport=uring"
	m := serverproc.ParseMount(line)
	if m == nil || m.Negatives != "lock:uncached" || !m.NegativesFromLock() {
		t.Fatalf("got %+v, want negatives lock:uncached", m)
	}
	tgt := targets.Target{Kind: targets.TargetKernfsim, Lock: "mutex", Mount: m}
	if got, want := tgt.Describe(), "kernfsim lock=mutex transport=uring permissions=server entry-timeout=0s attr-timeout=0s negative-timeout=0s negatives=lock:uncached"; got != want {
		t.Errorf("Describe: got %q, want %q", got, want)
	}
	if got, want := tgt.Setup(), "transport=uring permissions=server entry-timeout=0s attr-timeout=0s negatives=lock"; got != want {
		t.Errorf("Setup: got %q, want %q", got, want)
	}
	m = serverproc.ParseMount(strings.Replace(line, "negative-timeout=0s negatives=lock:uncached", "negative-timeout=30s negatives=override", 1))
	if m == nil || m.NegativesFromLock() || m.NegativeTimeout != 30*time.Second {
		t.Fatalf("override: got %+v", m)
	}
	tgt.Mount = m
	if got, want := tgt.Setup(), "transport=uring permissions=server entry-timeout=0s attr-timeout=0s negative-timeout=30s negatives=override"; got != want {
		t.Errorf("Setup: got %q, want %q", got, want)
	}
}
