package provenance

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

// WriteProvenance writes p as summary lines, each label padded to width.
func WriteProvenance(ew *textout.Writer, p Provenance, width int) {
	ew.Printf("%-*s %s %s\n", width, "program:", p.Program, p.Build())
	ew.Printf("%-*s %s\n", width, "machine:", p.Machine())
	if len(p.Args) > 0 {
		ew.Printf("%-*s %s\n", width, "command:", p.CommandLine())
	}
}
