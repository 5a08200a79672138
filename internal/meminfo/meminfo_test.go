package meminfo

import "testing"

func TestAvailable(t *testing.T) {
	if n := Available(); n <= 0 {
		t.Fatalf("Available: got %d, want the machine's MemAvailable in bytes", n)
	}
}
