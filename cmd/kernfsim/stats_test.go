package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernfsim/kernfsim/client"
)

func testStats(at time.Time, lookups, waitNs string) stats {
	return stats{at: at, keys: []string{"server.lock", "server.goroutines", "requests.LOOKUP", "lock.read.wait_ns"},
		vals: map[string]string{"server.lock": "rcu", "server.goroutines": "7", "requests.LOOKUP": lookups, "lock.read.wait_ns": waitNs}}
}

// A nanosecond counter is labelled without _ns and shown as a duration.
func TestPrintStatsUnits(t *testing.T) {
	var b bytes.Buffer
	if err := printStats(&b, testStats(time.Now(), "5", "1500000")); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "read.wait ") || !strings.Contains(out, "1.5ms") || strings.Contains(out, "_ns") {
		t.Errorf("got:\n%s", out)
	}
}

// Counters become rates per second; gauges stay as they stand.
func TestStatsRates(t *testing.T) {
	t0 := time.Now()
	prev, cur := testStats(t0, "100", "0"), testStats(t0.Add(2*time.Second), "300", "4000000")
	r := cur.rates(prev)
	if r["requests.LOOKUP"] != 100 || r["lock.read.wait_ns"] != 2e6 {
		t.Errorf("rates %v: want LOOKUP 100/s, wait 2e6 ns/s", r)
	}
	if _, ok := r["server.goroutines"]; ok {
		t.Error("a gauge got a rate")
	}
	var b bytes.Buffer
	if err := printRates(&b, cur, prev); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"requests.LOOKUP", "100.0/s", "lock.read.wait", "2ms/s", "server.goroutines", " 7\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	doc := cur.document(&prev, 2*time.Second)
	if doc["counters"].(map[string]any)["server.lock"] != "rcu" || doc["per_second"].(map[string]float64)["requests.LOOKUP"] != 100 {
		t.Errorf("document %v", doc)
	}
}

// parsedStats is a reading of the stats file text at at, through the
// file's parser as readStats reads it.
func parsedStats(t *testing.T, at time.Time, text string) stats {
	t.Helper()
	s, err := client.ParseStats([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return statsOf(at, s)
}

// lockText is a stats file of lock lines with hold times readNs and
// writeNs.
func lockText(lock string, readNs, writeNs int64, every, counted int) string {
	return fmt.Sprintf("server.lock %s\nlock.read.acquisitions 10\nlock.read.held_ns %d\nlock.write.acquisitions 2\n"+
		"lock.write.held_ns %d\nlock.hold_sample_every %d\nlock.read.counted %d\ngrace.periods 0\n", lock, readNs, writeNs, every, counted)
}

// One reading shows hold time as a duration and no utilization: there is
// no wall time to divide by.
func TestPrintStatsHeld(t *testing.T) {
	var b bytes.Buffer
	if err := printStats(&b, parsedStats(t, time.Now(), lockText("rwsem", 1500000, 0, 64, 1))); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"read.held ", "1.5ms", "hold_sample_every", " 64\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "utilization") {
		t.Errorf("one reading shows a utilization:\n%s", out)
	}
}

// Between two readings the lock's utilization is its hold time over the
// wall time, in text after the lock's lines and in JSON; a side that is
// not counted, or hold time that is not, shows none.
func TestStatsUtilization(t *testing.T) {
	t0 := time.Now()
	prev := parsedStats(t, t0, lockText("rwsem", 1e9, 1e9, 64, 1))
	cur := parsedStats(t, t0.Add(2*time.Second), lockText("rwsem", 4e9, 1.5e9, 64, 1))
	var b bytes.Buffer
	if err := printRates(&b, cur, prev); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	at := func(fields ...string) int {
		return slices.IndexFunc(lines, func(l string) bool { return slices.Equal(strings.Fields(l), fields) })
	}
	counted, read, write := at("lock.read.counted", "1"), at("lock.read.utilization", "1.500"), at("lock.write.utilization", "0.250")
	if counted < 0 || read != counted+1 || write != read+1 {
		t.Errorf("want read 1.500 then write 0.250 right after the lock's lines:\n%s", out)
	}
	if at("lock.read.held", "1.5s/s") < 0 {
		t.Errorf("lacks the hold time per second:\n%s", out)
	}
	u := cur.document(&prev, 2*time.Second)["lock_utilization"].(map[string]float64)
	if u["read"] != 1.5 || u["write"] != 0.25 {
		t.Errorf("JSON lock_utilization %v, want read 1.5, write 0.25", u)
	}

	none := parsedStats(t, t0.Add(2*time.Second), lockText("none", 0, 1e9, 64, 0))
	if u := none.utilization(parsedStats(t, t0, lockText("none", 0, 0, 64, 0))); len(u) != 1 || u["write"] != 0.5 {
		t.Errorf("none: utilization %v, want write 0.5 only", u)
	}
	off, offBefore := parsedStats(t, t0.Add(2*time.Second), lockText("rwsem", 0, 0, 0, 0)), parsedStats(t, t0, lockText("rwsem", 0, 0, 0, 0))
	if doc := off.document(&offBefore, 2*time.Second); doc["lock_utilization"] != nil {
		t.Errorf("counters off: lock_utilization %v, want none", doc["lock_utilization"])
	}
}
