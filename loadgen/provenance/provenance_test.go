package provenance

import "testing"

func TestProvenance(t *testing.T) {
	p := CaptureProvenance([]string{"loadgen", "--sim", "it's"})
	if p.Kernel == "" || p.OnlineCPUs < 1 || p.GOMAXPROCS < 1 || p.Version == "" || p.GoVersion == "" || p.CPUModel == "" {
		t.Errorf("incomplete: %+v", p)
	}
	if got, want := p.CommandLine(), `loadgen --sim 'it'\''s'`; got != want {
		t.Errorf("command line %s, want %s", got, want)
	}
}
