package provenance

import "time"

// The JSON form of this package's type, which every report embeds.
// Durations are integer nanoseconds (fields ending _ns). The form has
// NewJSONX, from the type, and, where a report is read back, a method
// returning the type.

// JSONProvenance is a Provenance.
type JSONProvenance struct {
	Program    string   `json:"program"`
	Version    string   `json:"version"`
	Revision   string   `json:"revision"` // "" when the build was not VCS-stamped
	GoVersion  string   `json:"go_version"`
	Kernel     string   `json:"kernel"`
	CPUModel   string   `json:"cpu_model"`
	OnlineCPUs int      `json:"online_cpus"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Args       []string `json:"args"`
	Start      string   `json:"start"` // RFC 3339
}

// NewJSONProvenance is p's JSON form.
func NewJSONProvenance(p Provenance) JSONProvenance {
	j := JSONProvenance{Program: p.Program, Version: p.Version, Revision: p.Revision, GoVersion: p.GoVersion,
		Kernel: p.Kernel, CPUModel: p.CPUModel, OnlineCPUs: p.OnlineCPUs, GOMAXPROCS: p.GOMAXPROCS, Args: p.Args}
	if j.Args == nil {
		j.Args = []string{}
	}
	if !p.Start.IsZero() {
		j.Start = p.Start.UTC().Format(time.RFC3339)
	}
	return j
}

// Provenance is NewJSONProvenance's inverse.
func (j JSONProvenance) Provenance() Provenance {
	p := Provenance{Program: j.Program, Version: j.Version, Revision: j.Revision, GoVersion: j.GoVersion,
		Kernel: j.Kernel, CPUModel: j.CPUModel, OnlineCPUs: j.OnlineCPUs, GOMAXPROCS: j.GOMAXPROCS, Args: j.Args}
	p.Start, _ = time.Parse(time.RFC3339, j.Start)
	return p
}
