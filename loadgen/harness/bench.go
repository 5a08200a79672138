package harness

import (
	"fmt"
	"io"
	"runtime"

	"github.com/kernfsim/kernfsim/internal/textout"
)

// BenchPkg is the pkg: line of the header: loadgen's, for every tool's
// benchmark lines.
const BenchPkg = "github.com/kernfsim/kernfsim/loadgen"

// WriteBenchProvenance writes go test's header, then the provenance as
// comment lines.
func WriteBenchProvenance(ew *textout.Writer, p Provenance) {
	ew.Printf("goos: %s\ngoarch: %s\npkg: %s\ncpu: %s\n", runtime.GOOS, runtime.GOARCH, BenchPkg, p.CPUModel)
	ew.Printf("# %s %s\n# machine: %s\n", p.Program, p.Build(), p.Machine())
	if len(p.Args) > 0 {
		ew.Printf("# command: %s\n", p.CommandLine())
	}
}

// WriteBenchHeader is go test's header alone, for reports without a
// Provenance (the kernel probes).
func WriteBenchHeader(w io.Writer) error {
	_, err := fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: %s\ncpu: %s\n", runtime.GOOS, runtime.GOARCH, BenchPkg, cpuModel())
	return err
}
