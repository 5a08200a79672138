package serverproc

import (
	"cmp"
	"strings"
	"time"

	"github.com/kernfsim/kernfsim/client"
)

// DefaultLock is the lock strategy of a target or server that names
// none.
const DefaultLock = "rwsem"

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
	// from a server that does not say.
	Negatives string
}

// NegativesFromLock reports whether the lock decided how missing names
// are cached.
func (m *Mount) NegativesFromLock() bool { return strings.HasPrefix(m.Negatives, "lock:") }

// parseMount reads a server's status line (client.ParseStatus); nil if
// line is not one.
func parseMount(line string) *Mount {
	st, ok := client.ParseStatus(line)
	if !ok {
		return nil
	}
	return &Mount{Lock: st.Lock, Transport: cmp.Or(st.Transport, DefaultTransport), Permissions: st.Permissions,
		EntryTimeout: st.EntryTimeout, AttrTimeout: st.AttrTimeout, NegativeTimeout: st.NegativeTimeout, Negatives: st.Negatives}
}
