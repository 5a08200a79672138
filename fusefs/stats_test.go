package fusefs

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/kernfsim/kernfsim/client"
)

// TestStatsFileParses checks the stats file's one writer (StatsFile)
// against its one parser (client.ParseStats): every line parses, and the
// typed values are the tree's and the server's.
func TestStatsFileParses(t *testing.T) {
	tr, sf := newServedTree(t, "rcu")
	var buf bytes.Buffer
	if err := sf.Show(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	unbound, err := client.ParseStats(buf.Bytes())
	if err != nil || unbound.Served || unbound.Lock != "rcu" {
		t.Fatalf("before a server is bound: %+v, %v; want lock rcu and no server lines", unbound, err)
	}
	srv := NewServer(tr, Options{})
	defer srv.Close()
	sf.Bind(srv)
	buf.Reset()
	if err := sf.Show(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	s, err := client.ParseStats(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	td, ls := tr.Teardowns(), tr.Strategy().Stats()
	if !s.Served || s.Nodeids != uint64(srv.Nodeids()) || s.Nodes != uint64(tr.Nodes()) ||
		s.TeardownsCompleted != td.Completed || s.WriteAcquisitions != uint64(ls.WriteAcquisitions) || s.Goroutines == 0 {
		t.Errorf("parsed %+v; the tree has %d nodes, %+v, %d write acquisitions", s, tr.Nodes(), td, ls.WriteAcquisitions)
	}
	if ops := slices.Sorted(maps.Keys(s.Requests)); !slices.Equal(ops, slices.Sorted(slices.Values(Opcodes))) {
		t.Errorf("request opcodes parsed: %v, want %v", ops, Opcodes)
	}
	for _, k := range s.Keys {
		if _, known := map[string]bool{"server.lock": true}[k]; !known && s.Values[k] == "" {
			t.Errorf("key %s has no value", k)
		}
	}
}
