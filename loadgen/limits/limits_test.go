package limits

import "testing"

func TestCgroupPath(t *testing.T) {
	for _, c := range []struct{ proc, want string }{
		{"0::/user.slice/x.scope\n", "/sys/fs/cgroup/user.slice/x.scope/pids.max"},
		{"9:name=systemd:/\n8:pids:/a/b\n0::/\n", "/sys/fs/cgroup/pids/a/b/pids.max"},
		{"4:memory:/m\n", ""},
	} {
		if got := cgroupPath(c.proc, "pids.max"); got != c.want {
			t.Errorf("cgroupPath(%q): got %q, want %q", c.proc, got, c.want)
		}
	}
}
