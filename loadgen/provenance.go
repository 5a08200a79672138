package loadgen

import (
	"bufio"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/internal/buildinfo"
	"github.com/kernfsim/kernfsim/internal/textout"
)

// Provenance is where and how a result was measured, so that two saved
// results can be told apart later: the program's build, the machine, and
// the command line.
type Provenance struct {
	Program    string   // "loadgen"
	Version    string   // v1.2.3 or devel
	Revision   string   // VCS commit, "+dirty" when modified; "" when the build was not stamped
	GoVersion  string   // go1.26.0
	Kernel     string   // uname release: 6.18.44
	CPUModel   string   // /proc/cpuinfo's model name
	OnlineCPUs int      // /sys/devices/system/cpu/online
	GOMAXPROCS int      // when the run began (the concur phase raises it to threads+1)
	Args       []string // the command line, program name first; nil when not given
	Start      time.Time
}

// CaptureProvenance reads the build and the machine now; args is the
// command line (os.Args), recorded as given.
func CaptureProvenance(args []string) Provenance {
	b := buildinfo.Read()
	p := Provenance{Program: "loadgen", Version: b.Version, Revision: b.Revision, GoVersion: b.Go,
		CPUModel: cpuModel(), OnlineCPUs: onlineCPUs(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Args: args, Start: time.Now()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		p.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return p
}

// CommandLine is Args as one shell-quoted line.
func (p Provenance) CommandLine() string {
	q := make([]string, len(p.Args))
	for i, a := range p.Args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// Build is the program's build in one phrase.
func (p Provenance) Build() string {
	return buildinfo.Info{Version: p.Version, Revision: p.Revision, Go: p.GoVersion}.String()
}

// Machine is the machine in one phrase.
func (p Provenance) Machine() string {
	return "Linux " + p.Kernel + ", " + p.CPUModel + ", " + strconv.Itoa(p.OnlineCPUs) +
		" online CPUs, GOMAXPROCS " + strconv.Itoa(p.GOMAXPROCS)
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cpuModel is the first "model name" of /proc/cpuinfo (x86), or the
// nearest thing other architectures print; "unknown" without one.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model", "Hardware":
			if v = strings.TrimSpace(v); ok && v != "" {
				return v
			}
		}
	}
	return "unknown"
}

// onlineCPUs counts /sys/devices/system/cpu/online ("0-3,8"), or falls
// back to the CPUs this process may use.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z, err2 := strconv.Atoi(hi)
		switch {
		case err1 != nil:
			return runtime.NumCPU()
		case !isRange:
			n++
		case err2 == nil && z >= a:
			n += z - a + 1
		default:
			return runtime.NumCPU()
		}
	}
	return n
}

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

// Transport is how t's operations reach the tree: what its server said
// (DefaultTransport when it did not say), or "none" for the in-process
// walker and for a directory loadgen did not mount.
func (t Target) Transport() string {
	if t.Mount != nil {
		return t.Mount.Transport
	}
	return "none"
}

// Describe is the target's kind, lock, transport, permission mode and
// timeouts, key=value, for headers.
func (t Target) Describe() string {
	lock := t.Lock
	if t.Kind == TargetPath {
		lock = ""
	}
	if t.Mount != nil {
		lock = t.Mount.Lock
	}
	s := TargetLabel(t)
	if lock != "" {
		s += " lock=" + lock
	}
	s += " " + t.setup(true)
	switch {
	case t.Kind == TargetSim && t.SimCost == 0 && t.sharedWrites():
		s += " sim=shared"
	case t.Kind == TargetSim && t.SimCost == 0:
		s += " sim=bare"
	case t.Kind == TargetSim:
		s += " sim-cost=" + t.SimCost.String() + " shared"
	}
	return s
}

// Setup is Describe without the kind and the lock: what the rows of one
// kind share in a comparison. Where each row's lock decides how missing
// names are cached, it says negatives=lock and not the row's timeout;
// Negatives gives each row's.
func (t Target) Setup() string { return t.setup(false) }

// setup is Setup, with the row's own rule for missing names if own.
func (t Target) setup(own bool) string {
	s := "transport=" + t.Transport()
	switch m := t.Mount; {
	case m != nil:
		s += " permissions=" + m.Permissions + " entry-timeout=" + m.EntryTimeout.String() +
			" attr-timeout=" + m.AttrTimeout.String()
		switch {
		case m.NegativesFromLock() && !own:
			s += " negatives=lock"
		case m.Negatives != "":
			s += " negative-timeout=" + m.NegativeTimeout.String() + " negatives=" + m.Negatives
		default:
			s += " negative-timeout=" + m.NegativeTimeout.String()
		}
	case t.Kind == TargetSim:
		s += " permissions=walker"
	}
	return s
}

// WriteProvenance writes p as summary lines, each label padded to width.
func WriteProvenance(ew *textout.Writer, p Provenance, width int) {
	ew.Printf("%-*s %s %s\n", width, "program:", p.Program, p.Build())
	ew.Printf("%-*s %s\n", width, "machine:", p.Machine())
	if len(p.Args) > 0 {
		ew.Printf("%-*s %s\n", width, "command:", p.CommandLine())
	}
}
