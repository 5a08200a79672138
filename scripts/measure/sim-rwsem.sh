#!/usr/bin/env bash
# rwsem against mutex in the sim (docs/performance.md; the study:
# docs/notes/2026-12-01-sim-rwsem.md):
#  1. loadgen compare of the bare sim under mutex and rwsem, files and
#     missing, 1, 2, 8 and 48 threads, REPEATS (default 5) interleaved runs
#     per cell: the table's xR is rwsem's median per-op over mutex's;
#  2. the same with the calibrated sim (--sim-cost auto against /sys);
#  3. BenchmarkWalk, open/read/close and missing at 48 goroutines, mutex
#     and rwsem, -cpu 2, -count REPEATS (goroutines not locked to threads);
#  4. BenchmarkLock's read side with the counters on and off, -cpu 1,2.
# Run it on a quiet machine: uptime comes first so a loaded run shows.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEATS=${REPEATS:-5}
uptime
dir=$(mktemp -d)
go build -o "$dir/loadgen" ./cmd/loadgen
common=(--locks mutex,rwsem --ops files,missing --threads 1,2,8,48 --repeats "$REPEATS")
echo "== 1. bare sim"
"$dir/loadgen" compare --sim "${common[@]}"
echo "== 2. calibrated sim"
"$dir/loadgen" compare --sim --sim-cost auto "${common[@]}"
go test -c -o "$dir/kernfsim.test" ./kernfsim/
go test -c -o "$dir/locking.test" ./locking/
echo "== 3. BenchmarkWalk, 48 goroutines, -cpu 2 (medians of $REPEATS)"
"$dir/kernfsim.test" -test.run '^$' -test.bench 'Walk/lock=(mutex|rwsem)/op=(files|missing)/parallel/goroutines=48' \
	-test.cpu 2 -test.benchtime 200000x -test.count "$REPEATS" | grep '^Benchmark' >"$dir/walk.txt"
echo "== 4. BenchmarkLock read side, counters on and off (medians of $REPEATS)"
"$dir/locking.test" -test.run '^$' -test.bench 'Lock/lock=(mutex|rwsem)/stats=(on|off)/side=read' \
	-test.cpu 1,2 -test.count "$REPEATS" | grep '^Benchmark' >"$dir/lock.txt"
awk '
function median(s,   n, v, i, j, t) {
	n = split(s, v, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
!($1 in seen) { seen[$1] = 1; names[++n] = $1 }
{ ns[$1] = ns[$1] " " $3 }
END { for (k = 1; k <= n; k++) printf "%-70s %10.1f ns/op\n", names[k], median(ns[names[k]]) }' "$dir/walk.txt" "$dir/lock.txt"
