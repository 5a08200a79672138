package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
