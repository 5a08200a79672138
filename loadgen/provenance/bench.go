package provenance

import (
	"io"

	"github.com/kernfsim/kernfsim/loadgen/gobench"
)

// BenchWriter returns a Go benchmark format writer to w whose header
// names p's CPU, after writing p as comment lines.
func BenchWriter(w io.Writer, p Provenance) *gobench.Writer {
	gw := gobench.NewWriter(w, p.CPUModel)
	gw.Comment("%s %s", p.Program, p.Build())
	gw.Comment("machine: %s", p.Machine())
	if len(p.Args) > 0 {
		gw.Comment("command: %s", p.CommandLine())
	}
	return gw
}

// HostBenchWriter returns a Go benchmark format writer to w whose header
// names this machine's CPU, for reports without a Provenance (the kernel
// probes).
func HostBenchWriter(w io.Writer) *gobench.Writer { return gobench.NewWriter(w, cpuModel()) }
