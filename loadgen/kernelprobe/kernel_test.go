package kernelprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/setting"
)

func TestUnshareUmountStormKernelInfo(t *testing.T) {
	k := ReadInfo()
	if k.Release == "" || len(k.RCU) != 3 {
		t.Fatalf("got %+v, want a release and the three rcupdate parameters", k)
	}
	for i, name := range []string{"rcu_expedited", "rcu_normal", "rcu_normal_after_boot"} {
		if k.RCU[i].Name != name || k.RCU[i].Value == "" {
			t.Errorf("parameter %d is %+v, want %s", i, k.RCU[i], name)
		}
	}
}

// The storm's own mounts are told apart from changes others made.
func TestUmountStormHostMounts(t *testing.T) {
	before := []string{"0:22 / /sys rw - sysfs sysfs rw", "254:0 / / rw - ext4 /dev/vda rw"}
	after := []string{"254:0 / / rw - ext4 /dev/vda rw", "0:99 / /mnt/x rw - fuse.other other rw",
		"0:77 / /tmp/loadgen-umount-storm-1/3 rw - tmpfs " + stormSource + " rw"}
	h := compareMounts(before, after)
	if len(h.Leaked) != 1 || !strings.Contains(h.Leaked[0], "/3 ") {
		t.Errorf("leaked %q, want the storm's tmpfs", h.Leaked)
	}
	if want := []string{"+ 0:99 / /mnt/x rw - fuse.other other rw", "- 0:22 / /sys rw - sysfs sysfs rw"}; strings.Join(h.Others, "|") != strings.Join(want, "|") {
		t.Errorf("others %q, want %q", h.Others, want)
	}
	if h.Unchanged() || !compareMounts(before, before).Unchanged() {
		t.Error("Unchanged is wrong")
	}
}

func TestUnshareUmountStormConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Op: "reboot", Count: 1, Command: []string{"x"}}, "Op"},
		{Config{Op: UmountStorm, Command: []string{"x"}}, "Count"},
		{Config{Op: Unshare, Count: 1, NS: "user", Command: []string{"x"}}, "NS"},
		{Config{Op: Unshare, Count: 1, NS: "ipc"}, "Command"},
	} {
		_, err := Run(context.Background(), c.cfg)
		var ce *setting.Error
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: got %v, want a setting.Error on %s", c.cfg, err, c.field)
		}
	}
}

// serveKernel runs the child side in this process.
func serveKernel(t *testing.T, spec kernelSpec) kernelReport {
	t.Helper()
	in, _ := json.Marshal(spec)
	var out bytes.Buffer
	require.NoError(t, Serve(context.Background(), bytes.NewReader(in), &out))
	var rep kernelReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return rep
}

// The child refuses to mount anything in the namespace it was told is
// the host's.
func TestUmountStormRefusesHostNamespace(t *testing.T) {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Skip(err)
	}
	rep := serveKernel(t, kernelSpec{Op: UmountStorm, Count: 1, HostMntNS: ns})
	if !strings.Contains(rep.Err, "not in a private mount namespace") || rep.Mount != nil {
		t.Errorf("got %+v, want a refusal", rep)
	}
}

// unshare's loop runs on a thread of its own that exits with it, so the
// namespaces it made never reach this process's other threads.
func TestUnshareLoopInProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare needs root")
	}
	host, _ := os.Readlink("/proc/self/ns/uts")
	rep := serveKernel(t, kernelSpec{Op: Unshare, NS: "uts", Count: 5})
	if rep.Err != "" || rep.Unshare == nil || rep.Unshare.Calls != 5 || rep.Unshare.Latency.Count != 5 {
		t.Fatalf("got %+v", rep)
	}
	// The loop's thread exits just after the loop: wait for it.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		var kept []string
		tasks, _ := filepath.Glob("/proc/self/task/*/ns/uts")
		for _, task := range tasks {
			if ns, err := os.Readlink(task); err == nil && ns != host {
				kept = append(kept, task+" is "+ns)
			}
		}
		assert.Empty(c, kept, "threads of this process kept the namespace (want %s)", host)
	}, 2*time.Second, time.Millisecond)
}
