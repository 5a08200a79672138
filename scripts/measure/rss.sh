#!/usr/bin/env bash
# What a kernfsim server's memory does under device churn (docs/performance.md;
# the study: docs/notes/2026-12-01-memory-under-churn.md):
# per round and per lock (LOCKS, default
# "rwsem rcu", alternating), start a server with --pprof, run CYCLES
# (default 55000) new_device/read/delete_device cycles from 6 shells, and
# sample at five points:
#   start      after mounting
#   churned    right after the last cycle
#   gc         after a forced GC (pprof's heap?gc=1)
#   idle60     after 60 s without requests (the runtime's scavenger)
#   dropped    after drop_caches (the kernel forgets its nodeids)
# Each sample: VmRSS, the Go heap allocated (live after a GC), idle and
# released to the OS, goroutine stacks, OS threads, the nodeid table's
# size. Medians over ROUNDS (default 3) per lock and point. Root only
# (mount, drop_caches).
# Run it on a quiet machine: uptime comes first so a loaded run shows.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
CYCLES=${CYCLES:-55000}
LOCKS=${LOCKS:-"rwsem rcu"}
PORT=${PORT:-6071}
uptime
dir=$(mktemp -d)
go build -o "$dir/kernfsim" ./cmd/kernfsim
mnt="$dir/mnt"
mkdir "$mnt"
raw="$dir/samples.txt"
: >"$raw"

# sample LOCK POINT PID: one line "LOCK POINT rss heapinuse heapidle released stack threads nodeids" (MiB)
sample() {
	local heap rss thr ids
	heap=$(curl -s "http://127.0.0.1:$PORT/debug/pprof/heap?debug=1")
	rss=$(awk '/VmRSS/ {print $2 / 1024}' "/proc/$3/status")
	thr=$(awk '/Threads/ {print $2}' "/proc/$3/status")
	ids=$(awk '$1 == "server.nodeids" {print $2}' "$mnt/kernel/kernfsim/stats")
	echo "$heap" | awk -v l="$1" -v p="$2" -v rss="$rss" -v thr="$thr" -v ids="$ids" '
		$2 == "HeapAlloc" {hi = $4} $2 == "HeapIdle" {hd = $4} $2 == "HeapReleased" {hr = $4} $2 == "Stack" {st = $4}
		END {printf "%s %s %.1f %.1f %.1f %.1f %.1f %d %d\n", l, p, rss, hi/1048576, hd/1048576, hr/1048576, st/1048576, thr, ids}' | tee -a "$raw"
}

# churn: CYCLES cycles from 6 shells, each on its own 50 names
churn() {
	local w pids=()
	for w in 1 2 3 4 5 6; do
		(
			for ((i = 0; i < CYCLES / 6; i++)); do
				n="c${w}_$((i % 50))"
				echo "$n 4" >"$mnt/bus/kernfsim/new_device" 2>/dev/null || true
				read -r _ <"$mnt/devices/kernfsim/$n/value" 2>/dev/null || true
				echo "$n" >"$mnt/bus/kernfsim/delete_device" 2>/dev/null || true
			done
		) &
		pids+=($!)
	done
	wait "${pids[@]}"
}

for r in $(seq "$ROUNDS"); do
	for lock in $LOCKS; do
		"$dir/kernfsim" mount "$mnt" --lock "$lock" --pprof "127.0.0.1:$PORT" --cpus 4 --sockets 1 --mem-blocks 8 >"$dir/status" 2>&1 &
		pid=$!
		until grep -q serving "$dir/status" 2>/dev/null; do sleep 0.1; done
		sample "$lock" start "$pid"
		churn
		sample "$lock" churned "$pid"
		curl -s "http://127.0.0.1:$PORT/debug/pprof/heap?gc=1" >/dev/null
		sample "$lock" gc "$pid"
		sleep 60
		sample "$lock" idle60 "$pid"
		echo 3 >/proc/sys/vm/drop_caches
		sleep 2
		sample "$lock" dropped "$pid"
		kill -TERM "$pid"
		wait "$pid" || true
		echo "round $r/$ROUNDS lock=$lock done" >&2
	done
done
awk '
function median(s,   n, i, j, t, v) {
	n = split(s, v, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ k = $1 " " $2; if (!(k in seen)) { order[++n] = k; seen[k] = 1 } for (f = 3; f <= 9; f++) vals[k, f] = vals[k, f] " " $f }
END {
	printf "%-16s %8s %10s %9s %9s %8s %8s %8s\n", "lock point", "RSS MiB", "heap live", "heap idle", "released", "stacks", "threads", "nodeids"
	for (i = 1; i <= n; i++) {
		k = order[i]
		printf "%-16s %8.1f %10.1f %9.1f %9.1f %8.1f %8d %8d\n", k, median(vals[k, 3]), median(vals[k, 4]), median(vals[k, 5]), median(vals[k, 6]), median(vals[k, 7]), median(vals[k, 8]), median(vals[k, 9])
	}
}' "$raw"
rm -rf "$dir"
