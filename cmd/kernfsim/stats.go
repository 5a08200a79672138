package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"time"

	"github.com/kernfsim/kernfsim/kernfsim"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/locking"
)

// statsFlags are the flags of kernfsim stats.
type statsFlags struct {
	json  bool
	watch time.Duration
}

func newStatsCmd() *cobra.Command {
	var f statsFlags
	cmd := &cobra.Command{
		Use:   "stats MOUNTPOINT",
		Short: "Print a kernfsim mount's live counters (kernel/kernfsim/stats)",
		Long: `Print a kernfsim mount's live counters once, grouped: the server (lock,
nodeid table, open files, goroutines), FUSE requests by opcode, the tree,
the lock's acquisitions, contention, wait time and hold time (as Linux's
/proc/lock_stat; hold time is estimated from one acquisition in
lock.hold_sample_every), and the grace periods.

With --watch INTERVAL it prints, every INTERVAL until interrupted, what
changed per second (requests/s, lock wait per second), the lock's
utilization over the interval (time held per unit of time: the busy
fraction of a side that excludes, the mean number of holders of a shared
read side) and the gauges as they stand. --json prints the same as JSON:
one document, or with --watch one line per interval (utilization under
"lock_utilization").`,
		Example: `  kernfsim stats /mnt/k
  kernfsim stats /mnt/k --watch 1s
  kernfsim stats /mnt/k --json | jq '.counters["requests.LOOKUP"]'
  kernfsim stats /mnt/k --watch 1s --json | jq .lock_utilization`,
		Args: cli.MountpointArg("kernfsim stats /mnt/k"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.watch < 0 || (cmd.Flags().Changed("watch") && f.watch < 10*time.Millisecond) {
				return &cli.UsageError{Err: fmt.Errorf("invalid value %v for --watch: give an interval of 10ms or more, e.g. 1s", f.watch)}
			}
			if f.watch > 0 {
				return watchStats(cmd.Context(), cmd.OutOrStdout(), args[0], f)
			}
			s, err := readStats(args[0])
			if err != nil {
				return err
			}
			if f.json {
				return writeJSONLine(cmd.OutOrStdout(), s.document(nil, 0))
			}
			return printStats(cmd.OutOrStdout(), s)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.Flags().DurationVar(&f.watch, "watch", 0, "print rates per second every `INTERVAL` until interrupted")
	return cmd
}

// stats is one reading of the stats file, in its order.
type stats struct {
	at   time.Time
	keys []string
	vals map[string]string
	lock locking.Stats // the lock's lines, typed (client.Stats.LockStats)
}

// readStats reads and parses MOUNTPOINT/kernel/kernfsim/stats, "key
// value" lines.
func readStats(mnt string) (stats, error) {
	s, err := client.ReadStats(mnt)
	switch {
	case kernfsim.Disconnected(err):
		return stats{}, &cli.UsageError{Err: fmt.Errorf("%s: the kernfsim server is gone (transport endpoint is not connected): restart it with kernfsim mount %s --force", mnt, mnt)}
	case errors.Is(err, os.ErrNotExist):
		return stats{}, &cli.UsageError{Err: fmt.Errorf("%s is not a kernfsim mount (no kernel/kernfsim/stats)", mnt)}
	case err != nil:
		return stats{}, &cli.RuntimeError{Err: err}
	}
	return statsOf(time.Now(), s), nil
}

// statsOf is the reading s, taken at at.
func statsOf(at time.Time, s client.Stats) stats {
	return stats{at: at, keys: s.Keys, vals: s.Values, lock: s.LockStats()}
}

// utilization is each side's time held per unit of wall time from prev to
// s (locking.Stats.Utilization), keyed "read" and "write"; a side is left
// out where it is not counted, and both where hold time is not (counters
// off, or a server without the lines).
func (s stats) utilization(prev stats) map[string]float64 {
	wall := s.at.Sub(prev.at)
	if !s.lock.CountersSwitchedOn || wall <= 0 {
		return nil
	}
	read, write := s.lock.Sub(prev.lock).Utilization(wall)
	u := map[string]float64{"write": write}
	if s.lock.ReadSideCounted {
		u["read"] = read
	}
	return u
}

// gauges are the values that stand rather than count up: watching shows
// them as they are, not per second.
var gauges = []string{"server.lock", "server.nodeids", "server.open_files", "server.goroutines", "notify.pending", "tree.nodes",
	"lock.hold_sample_every", "lock.read.counted", "grace.callbacks_pending", "grace.latency_max_ns"}

// sectionTitles name the groups of keys, by prefix.
var sectionTitles = map[string]string{"server": "server", "requests": "requests", "notify": "kernel cache notifications", "tree": "tree", "lock": "lock counters", "grace": "grace periods"}

// printStats prints the counters in groups: the server (lock, tables,
// requests by opcode, non-zero ones only), the tree, the lock's counters
// and the grace periods. A nanosecond counter is labelled without _ns and
// shown as a duration.
func printStats(out io.Writer, s stats) error {
	bw := bufio.NewWriter(out)
	section := "-"
	for _, k := range s.keys {
		group, name := splitKey(k)
		if group == "requests" && s.vals[k] == "0" {
			continue
		}
		if group != section {
			section = group
			fmt.Fprintf(bw, "%s\n", sectionTitles[group])
		}
		label, val := humanize(name, s.vals[k])
		fmt.Fprintf(bw, "  %-22s %14s\n", label, val)
	}
	return bw.Flush()
}

func splitKey(k string) (group, name string) {
	group, name, found := strings.Cut(k, ".")
	if !found {
		return "", k
	}
	return group, name
}

// humanize shows a nanosecond counter as a duration, labelled without
// its _ns.
func humanize(name, v string) (label, value string) {
	base, ns := strings.CutSuffix(name, "_ns")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ns || err != nil {
		return name, v
	}
	return base, time.Duration(n).String()
}

// document is s as JSON: every counter as a number (the lock's name as a
// string); with prev, also the counters' change per second since it and
// the lock's utilization (lock_utilization, where hold time is counted).
func (s stats) document(prev *stats, interval time.Duration) map[string]any {
	counters := map[string]any{}
	for _, k := range s.keys {
		if n, err := strconv.ParseInt(s.vals[k], 10, 64); err == nil {
			counters[k] = n
		} else {
			counters[k] = s.vals[k]
		}
	}
	doc := map[string]any{"time": s.at.UTC().Format(time.RFC3339Nano), "counters": counters}
	if prev != nil {
		doc["interval_ns"] = int64(interval)
		doc["per_second"] = s.rates(*prev)
		if u := s.utilization(*prev); u != nil {
			doc["lock_utilization"] = u
		}
	}
	return doc
}

// rates are the counters' change per second since prev (gauges left out).
func (s stats) rates(prev stats) map[string]float64 {
	secs := s.at.Sub(prev.at).Seconds()
	r := map[string]float64{}
	for _, k := range s.keys {
		cur, err1 := strconv.ParseInt(s.vals[k], 10, 64)
		old, err2 := strconv.ParseInt(prev.vals[k], 10, 64)
		if err1 == nil && err2 == nil && secs > 0 && !slices.Contains(gauges, k) {
			r[k] = float64(cur-old) / secs
		}
	}
	return r
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// watchStats prints, every f.watch until ctx ends, the counters' change
// per second and the gauges. The end of ctx (SIGINT, SIGTERM) is a normal
// end.
func watchStats(ctx context.Context, out io.Writer, mnt string, f statsFlags) error {
	prev, err := readStats(mnt)
	if err != nil {
		return err
	}
	tick := time.NewTicker(f.watch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur, err := readStats(mnt)
		if err != nil {
			return err
		}
		if f.json {
			err = writeJSONLine(out, cur.document(&prev, f.watch))
		} else {
			err = printRates(out, cur, prev)
		}
		if err != nil {
			return err
		}
		prev = cur
	}
}

// printRates prints one interval: a time line, then every counter that
// changed, per second (a nanosecond counter as time per second), and the
// gauges; after the lock's lines, its utilization over the interval.
func printRates(out io.Writer, cur, prev stats) error {
	bw := bufio.NewWriter(out)
	fmt.Fprintf(bw, "%s  per second over %v\n", cur.at.Format("15:04:05.000"), cur.at.Sub(prev.at).Round(time.Millisecond))
	rates, lastLock := cur.rates(prev), lastWithPrefix(cur.keys, "lock.")
	for _, k := range cur.keys {
		if slices.Contains(gauges, k) {
			label, val := humanize(k, cur.vals[k])
			fmt.Fprintf(bw, "  %-28s %14s\n", label, val)
		} else if r := rates[k]; r != 0 {
			label, ns := strings.CutSuffix(k, "_ns")
			val := strconv.FormatFloat(r, 'f', 1, 64) + "/s"
			if ns {
				val = time.Duration(r).Round(time.Microsecond).String() + "/s"
			}
			fmt.Fprintf(bw, "  %-28s %14s\n", label, val)
		}
		if k == lastLock {
			printUtilization(bw, cur.utilization(prev))
		}
	}
	return bw.Flush()
}

// printUtilization prints the lock's utilization, read side first.
func printUtilization(w io.Writer, u map[string]float64) {
	for _, side := range []string{"read", "write"} {
		if v, ok := u[side]; ok {
			fmt.Fprintf(w, "  %-28s %14s\n", "lock."+side+".utilization", strconv.FormatFloat(v, 'f', 3, 64))
		}
	}
}

// lastWithPrefix is the last of keys that starts with prefix, or "".
func lastWithPrefix(keys []string, prefix string) string {
	for _, k := range slices.Backward(keys) {
		if strings.HasPrefix(k, prefix) {
			return k
		}
	}
	return ""
}
