package fusefs

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/testkit"
	"github.com/kernfsim/kernfsim/locking"
)

// TestStatsFileParses checks the stats file's one writer (StatsFile)
// against its one parser (client.ParseStats): every line parses, and the
// typed values are the tree's and the server's.
func TestStatsFileParses(t *testing.T) {
	tr, sf := newServedTree(t, "rcu")
	var buf bytes.Buffer
	require.NoError(t, sf.Show(context.Background(), &buf))
	unbound, err := client.ParseStats(buf.Bytes())
	if err != nil || unbound.Served || unbound.Lock != "rcu" {
		t.Fatalf("before a server is bound: %+v, %v; want lock rcu and no server lines", unbound, err)
	}
	srv := New(tr, Options{})
	defer srv.Close()
	sf.bind(srv)
	buf.Reset()
	require.NoError(t, sf.Show(context.Background(), &buf))
	s, err := client.ParseStats(buf.Bytes())
	require.NoError(t, err)
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

// TestStatsFileLockLines: each lock counter the file writes parses back
// to its field, every field distinct so that no two keys are swapped,
// the attribute and open-file locks' included (kernfs64, kernfs74).
func TestStatsFileLockLines(t *testing.T) {
	want := locking.Stats{LockCounts: locking.LockCounts{ReadAcquisitions: 1, ReadContended: 2, ReadWait: 3, ReadHeld: 4, WriteAcquisitions: 5, WriteContended: 6, WriteWait: 7, WriteHeld: 8},
		HoldSampleEvery: 64, ReadSideCounted: true, ReadFast: 9, CountersSwitchedOn: true,
		Attr:     locking.LockCounts{ReadAcquisitions: 10, ReadContended: 11, ReadWait: 12, ReadHeld: 13, WriteAcquisitions: 14, WriteContended: 15, WriteWait: 16, WriteHeld: 17},
		OpenFile: locking.LockCounts{WriteAcquisitions: 18, WriteContended: 19, WriteWait: 20, WriteHeld: 21}}
	var buf bytes.Buffer
	line := lineWriter(&buf)
	line("server.lock", "rwsem")
	showLock(line, want, locking.Traits{SeparateAttrLock: true, OpenFileLocks: true})
	s, err := client.ParseStats(buf.Bytes())
	require.NoError(t, err)
	if got := s.LockStats(); got != want {
		t.Fatalf("parsed %+v\nwant %+v\nfrom:\n%s", got, want, buf.String())
	}
}

// TestStatsFileOtherLocks: a strategy's locks besides the tree lock have
// lines of their own, and only under a strategy that has them.
func TestStatsFileOtherLocks(t *testing.T) {
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr, sf := newServedTree(t, lock)
		tr.Getattr(tr.Root()) // kernfs64: under the attribute rwsem
		var buf bytes.Buffer
		require.NoError(t, sf.Show(context.Background(), &buf))
		s, err := client.ParseStats(buf.Bytes())
		require.NoError(t, err)
		traits := tr.Strategy().Traits()
		for key, want := range map[string]bool{
			"lock.read.fast":                   true,
			"lock.attr.read.acquisitions":      traits.SeparateAttrLock,
			"lock.attr.write.held_ns":          traits.SeparateAttrLock,
			"lock.open_file.write.contended":   traits.OpenFileLocks,
			"lock.open_file.read.acquisitions": false,
		} {
			if _, got := s.Values[key]; got != want {
				t.Errorf("%s: present %v, want %v", key, got, want)
			}
		}
		if traits.SeparateAttrLock && s.Values["lock.attr.read.acquisitions"] == "0" {
			t.Errorf("lock.attr.read.acquisitions 0 after a getattr")
		}
	})
}

// TestStatsFileLockCounters: under every strategy the file shows the
// tree's lock counters as they stood while it was made: between a
// snapshot before Show and one after.
func TestStatsFileLockCounters(t *testing.T) {
	testkit.ForEachLock(t, locking.Names, func(t *testing.T, lock string) {
		tr, sf := newServedTree(t, lock)
		st := tr.Strategy()
		for range 100 {
			st.RUnlock(st.RLock())
		}
		before := st.Stats()
		var buf bytes.Buffer
		require.NoError(t, sf.Show(context.Background(), &buf))
		after := st.Stats()
		s, err := client.ParseStats(buf.Bytes())
		require.NoError(t, err)
		between := func(what string, got uint64, lo, hi int64) {
			if got < uint64(lo) || got > uint64(hi) {
				t.Errorf("%s: file says %d, want %d to %d", what, got, lo, hi)
			}
		}
		between("lock.read.acquisitions", s.ReadAcquisitions, before.ReadAcquisitions, after.ReadAcquisitions)
		between("lock.read.held_ns", uint64(s.ReadHeld), int64(before.ReadHeld), int64(after.ReadHeld))
		between("lock.write.acquisitions", s.WriteAcquisitions, before.WriteAcquisitions, after.WriteAcquisitions)
		between("lock.write.held_ns", uint64(s.WriteHeld), int64(before.WriteHeld), int64(after.WriteHeld))
		if int(s.HoldSampleEvery) != after.HoldSampleEvery || s.ReadCounted != after.ReadSideCounted {
			t.Errorf("file says sample rate %d, read counted %v; the lock says %d, %v",
				s.HoldSampleEvery, s.ReadCounted, after.HoldSampleEvery, after.ReadSideCounted)
		}
		if after.ReadSideCounted && s.ReadAcquisitions < 100 {
			t.Errorf("lock.read.acquisitions %d, want at least the test's 100", s.ReadAcquisitions)
		}
	})
}
