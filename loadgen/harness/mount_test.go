package harness

import (
	"strings"
	"testing"
	"time"
)

func TestParseMount(t *testing.T) {
	line := "kernfsim: serving synthetic tree of 8 CPUs on /tmp/m: lock=rcu gp=deferred tick=4ms entry-timeout=1s attr-timeout=0s negative-timeout=30s permissions=server"
	m := parseMount(line)
	want := Mount{Lock: "rcu gp=deferred tick=4ms", Transport: DefaultTransport, Permissions: "server",
		EntryTimeout: time.Second, NegativeTimeout: 30 * time.Second}
	if m == nil || *m != want {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	if m := parseMount(line + " transport=uring"); m == nil || m.Transport != "uring" {
		t.Errorf("transport=uring: got %+v", m)
	}
	if m := parseMount("kernfsim: mirror of /sys: 12 files left out"); m != nil {
		t.Errorf("not a status line: got %+v", m)
	}
	tgt := Target{Kind: TargetKernfsim, Lock: "rcu", Mount: m}
	if got := tgt.Describe(); got != "kernfsim lock=rcu gp=deferred tick=4ms transport=devfuse permissions=server entry-timeout=1s attr-timeout=0s negative-timeout=30s" {
		t.Errorf("Describe: %q", got)
	}
	for _, tc := range []struct {
		t    Target
		want string
	}{{Target{Kind: TargetSim, Lock: "mutex"}, "sim lock=mutex transport=none permissions=walker sim=bare"},
		{Target{Kind: TargetSim, Lock: "rwsem", SimCost: 5 * time.Microsecond}, "sim lock=rwsem transport=none permissions=walker sim-cost=5µs shared"},
		{Target{Kind: TargetPath, Dir: "/sys"}, "sys transport=none"}} {
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
	m := parseMount(line)
	if m == nil || m.Negatives != "lock:uncached" || !m.NegativesFromLock() {
		t.Fatalf("got %+v, want negatives lock:uncached", m)
	}
	tgt := Target{Kind: TargetKernfsim, Lock: "mutex", Mount: m}
	if got, want := tgt.Describe(), "kernfsim lock=mutex transport=uring permissions=server entry-timeout=0s attr-timeout=0s negative-timeout=0s negatives=lock:uncached"; got != want {
		t.Errorf("Describe: got %q, want %q", got, want)
	}
	if got, want := tgt.Setup(), "transport=uring permissions=server entry-timeout=0s attr-timeout=0s negatives=lock"; got != want {
		t.Errorf("Setup: got %q, want %q", got, want)
	}
	m = parseMount(strings.Replace(line, "negative-timeout=0s negatives=lock:uncached", "negative-timeout=30s negatives=override", 1))
	if m == nil || m.NegativesFromLock() || m.NegativeTimeout != 30*time.Second {
		t.Fatalf("override: got %+v", m)
	}
	tgt.Mount = m
	if got, want := tgt.Setup(), "transport=uring permissions=server entry-timeout=0s attr-timeout=0s negative-timeout=30s negatives=override"; got != want {
		t.Errorf("Setup: got %q, want %q", got, want)
	}
}

func TestProvenance(t *testing.T) {
	p := CaptureProvenance([]string{"loadgen", "--sim", "it's"})
	if p.Kernel == "" || p.OnlineCPUs < 1 || p.GOMAXPROCS < 1 || p.Version == "" || p.GoVersion == "" || p.CPUModel == "" {
		t.Errorf("incomplete: %+v", p)
	}
	if got, want := p.CommandLine(), `loadgen --sim 'it'\''s'`; got != want {
		t.Errorf("command line %s, want %s", got, want)
	}
}
