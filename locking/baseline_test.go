package locking

import (
	"slices"
	"testing"
)

// TestBaseline holds Baseline to a strategy New makes, the first of Names.
func TestBaseline(t *testing.T) {
	if len(Names) == 0 || Names[0] != Baseline {
		t.Fatalf("Names = %v, want %q first", Names, Baseline)
	}
	s, err := New(Baseline, Options{})
	if err != nil {
		t.Fatalf("New(%q): %v", Baseline, err)
	}
	if s.Name() != Baseline || !slices.Contains(Names, s.Name()) {
		t.Errorf("New(%q).Name() = %q", Baseline, s.Name())
	}
}
