package client

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The protocol between a program that starts a kernfsim server as its
// child (loadgen) and the server: the child's command line, the status
// line it prints on stdout once it serves, and the prefixes of the lines
// it prints on stderr. The server writes with Status.String and the
// parent reads with ParseStatus and ServerMessages; status_test.go holds
// the two against each other.

// The server's command line: `kernfsim mount MOUNTPOINT` (Command's
// words, then the mountpoint), then these flags and any others.
const (
	LockFlag      = "--lock"
	TransportFlag = "--transport"
)

// ForceFlag makes `kernfsim mount` serve a mountpoint whose server
// died.
const ForceFlag = "--force"

// RemountCommand is the command line that serves dir again after its
// server died.
func RemountCommand(dir string) string { return "kernfsim mount " + dir + " " + ForceFlag }

// MountArgs are the arguments after the program's name that serve
// mountpoint under lock: command's own (the subcommand, "mount"), the
// mountpoint, the lock, extra flags, and the transport unless it is "".
func MountArgs(command []string, mountpoint, lock, transport string, extra []string) []string {
	args := append(append(slices.Clone(command), mountpoint, LockFlag, lock), extra...)
	if transport != "" {
		args = append(args, TransportFlag, transport)
	}
	return args
}

// The prefixes of the server's lines on stderr: its own notices, and
// the errors its mount command reports before it exits.
const (
	ServerPrefix = "kernfsim: "
	MountPrefix  = "kernfsim mount: "
	// usagePointer begins the line pointing at --help that follows a
	// usage error: it names the server's command, not its parent's.
	usagePointer = "Run '"
)

// statusPrefix begins the status line.
const statusPrefix = ServerPrefix + "serving "

// Status is what a kernfsim server says on stdout once it serves.
type Status struct {
	Tree       string // "synthetic tree of 8 CPUs", "mirror of /sys"
	Mountpoint string
	// Lock is the strategy with its details: "rwsem", "rcu gp=normal
	// tick=4ms".
	Lock                                       string
	EntryTimeout, AttrTimeout, NegativeTimeout time.Duration
	// Negatives is the rule for missing names: lock:cached, lock:uncached
	// or override; "" from a server too old to say.
	Negatives   string
	Permissions string // kernel or server
	// Transport is what serves the requests (devfuse, uring); "" from a
	// server too old to say.
	Transport string
}

// String is the status line, without its newline.
func (s Status) String() string {
	return fmt.Sprintf("%s%s on %s: lock=%s entry-timeout=%v attr-timeout=%v negative-timeout=%v negatives=%s permissions=%s transport=%s",
		statusPrefix, s.Tree, s.Mountpoint, s.Lock, s.EntryTimeout, s.AttrTimeout, s.NegativeTimeout, s.Negatives, s.Permissions, s.Transport)
}

var statusField = regexp.MustCompile(`(entry-timeout|attr-timeout|negative-timeout|negatives|permissions|transport)=(\S+)`)

// ParseStatus reads a status line; ok is false if line is not one. The
// fields an older server did not print stay zero.
func ParseStatus(line string) (s Status, ok bool) {
	head, rest, ok := strings.Cut(line, " lock=")
	if !ok || !strings.HasPrefix(line, statusPrefix) {
		return Status{}, false
	}
	if i := strings.LastIndex(head, " on "); i >= 0 {
		s.Tree, s.Mountpoint = head[len(statusPrefix):i], strings.TrimSuffix(head[i+len(" on "):], ":")
	}
	s.Lock, _, _ = strings.Cut(rest, " entry-timeout=")
	for _, f := range statusField.FindAllStringSubmatch(line, -1) {
		d, _ := time.ParseDuration(f[2])
		switch f[1] {
		case "entry-timeout":
			s.EntryTimeout = d
		case "attr-timeout":
			s.AttrTimeout = d
		case "negative-timeout":
			s.NegativeTimeout = d
		case "negatives":
			s.Negatives = f[2]
		case "permissions":
			s.Permissions = f[2]
		case "transport":
			s.Transport = f[2]
		}
	}
	return s, true
}

// ServerMessages are the distinct messages of a server's stderr, in
// order, without the server's prefixes and without its pointer to
// --help.
func ServerMessages(stderr string) []string {
	var msgs []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, usagePointer) {
			continue
		}
		for _, p := range []string{MountPrefix, ServerPrefix} {
			line = strings.TrimPrefix(line, p)
		}
		if !slices.Contains(msgs, line) {
			msgs = append(msgs, line)
		}
	}
	return msgs
}
