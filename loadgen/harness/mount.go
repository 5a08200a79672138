package harness

import (
	"regexp"
	"strings"
	"time"
)

// DefaultTransport is the transport of a kernfsim server that does not
// say which it got: go-fuse's /dev/fuse loop.
const DefaultTransport = "devfuse"

// Mount is how a kernfsim FUSE server serves a target, from the line it
// prints once it serves.
type Mount struct {
	Lock                                       string // the server's lock detail: "rwsem", "rcu gp=normal tick=4ms"
	Transport                                  string // devfuse, or what the server reported
	Permissions                                string // kernel or server
	EntryTimeout, AttrTimeout, NegativeTimeout time.Duration
	// FellBack is why a server left to choose its transport serves over
	// /dev/fuse (client.FallbackNotice), with what would enable io_uring;
	// "" if it did not say.
	FellBack string
	// Negatives is the server's rule for missing names: lock:cached or
	// lock:uncached when its lock decided, override when a flag did, ""
	// from a server too old to say.
	Negatives string
}

// NegativesFromLock reports whether the lock decided how missing names
// are cached.
func (m *Mount) NegativesFromLock() bool { return strings.HasPrefix(m.Negatives, "lock:") }

var statusField = regexp.MustCompile(`(entry-timeout|attr-timeout|negative-timeout|negatives|permissions|transport)=(\S+)`)

// parseMount reads a server's status line ("kernfsim: serving ... on MNT:
// lock=rwsem entry-timeout=0s ... permissions=kernel [transport=T]"); nil
// if line is not one.
func parseMount(line string) *Mount {
	_, rest, ok := strings.Cut(line, " lock=")
	if !ok || !strings.HasPrefix(line, "kernfsim: serving ") {
		return nil
	}
	m := &Mount{Transport: DefaultTransport}
	m.Lock, _, _ = strings.Cut(rest, " entry-timeout=")
	for _, f := range statusField.FindAllStringSubmatch(line, -1) {
		d, _ := time.ParseDuration(f[2])
		switch f[1] {
		case "entry-timeout":
			m.EntryTimeout = d
		case "attr-timeout":
			m.AttrTimeout = d
		case "negative-timeout":
			m.NegativeTimeout = d
		case "negatives":
			m.Negatives = f[2]
		case "permissions":
			m.Permissions = f[2]
		case "transport":
			m.Transport = f[2]
		}
	}
	return m
}
