package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The status line a server writes reads back as what it said.
func TestStatusRoundTrip(t *testing.T) {
	for _, want := range []Status{
		{Tree: "synthetic tree of 8 CPUs", Mountpoint: "/tmp/m", Lock: "rcu gp=deferred tick=4ms", EntryTimeout: time.Second,
			NegativeTimeout: 30 * time.Second, Negatives: "override", Permissions: "server", Transport: "uring"},
		{Tree: "mirror of /sys", Mountpoint: "/mnt/k", Lock: "mutex", Negatives: "lock:uncached", Permissions: "kernel", Transport: "devfuse"},
	} {
		got, ok := ParseStatus(want.String())
		require.True(t, ok, "not a status line: %q", want.String())
		assert.Equal(t, want, got)
	}
}

// A line from a server too old to say its transport and rule for
// missing names parses, with those fields empty; other lines do not.
func TestParseStatusOlder(t *testing.T) {
	got, ok := ParseStatus("kernfsim: serving synthetic tree of 8 CPUs on /tmp/m: lock=rwsem entry-timeout=0s attr-timeout=1s negative-timeout=0s permissions=kernel")
	require.True(t, ok)
	assert.Equal(t, Status{Tree: "synthetic tree of 8 CPUs", Mountpoint: "/tmp/m", Lock: "rwsem", AttrTimeout: time.Second, Permissions: "kernel"}, got)
	_, ok = ParseStatus("kernfsim: mirror of /sys: 12 files left out")
	assert.False(t, ok)
}

func TestRemountCommand(t *testing.T) {
	assert.Equal(t, "kernfsim mount /mnt/k --force", RemountCommand("/mnt/k"))
}

func TestMountArgs(t *testing.T) {
	assert.Equal(t, []string{"mount", "/tmp/m", "--lock", "rcu", "--gp=deferred", "--transport", "uring"},
		MountArgs([]string{"mount"}, "/tmp/m", "rcu", "uring", []string{"--gp=deferred"}))
	assert.Equal(t, []string{"mount", "/tmp/m", "--lock", "rwsem"}, MountArgs([]string{"mount"}, "/tmp/m", "rwsem", "", nil))
}

// What a server prints on stderr before it exits reads as its messages,
// once each, without its prefixes or its pointer to --help.
func TestServerMessages(t *testing.T) {
	stderr := "kernfsim mount: /dev/fuse: no such device\nRun 'kernfsim mount --help' for usage.\n" +
		"kernfsim: /dev/fuse: no such device\n\nkernfsim: try --sim\n"
	assert.Equal(t, []string{"/dev/fuse: no such device", "try --sim"}, ServerMessages(stderr))
}
