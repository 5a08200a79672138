#!/usr/bin/env bash
# The in-process walker's scaling from one CPU to two (docs/performance.md;
# the study: docs/notes/2026-12-01-walker-scaling.md):
# BenchmarkWalk for rcu and none, -cpu 1,2, ROUNDS
# rounds (default 5), each running the test binary once per lock, rcu first
# in odd rounds and none first in even ones, so the variants interleave and
# neither always comes first; medians per variant, then
#   rcu speed-up = ns/op at -cpu 1 / ns/op at -cpu 2 (files, missing,
#                  resolve; parallel and 48 goroutines; target >= 1.9x)
#   rcu/none     = rcu's ns/op / none's, serial at -cpu 1 (target <= 1.10x)
# and, in the same rounds, the machine's own ceiling: BenchmarkSuspect's
# private arithmetic and private loads, which share nothing (a VM's two
# vCPUs lose speed-up to their host, and that moves within minutes).
# Run it on a quiet machine: uptime comes first so a loaded run shows.
# Raw output is kept in $OUT (default /tmp/sim-scaling.txt) for benchstat.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
OUT=${OUT:-/tmp/sim-scaling.txt}
uptime
bin=$(mktemp -d)/kernfsim.test
go test -c -o "$bin" ./kernfsim/
: >"$OUT"
for r in $(seq "$ROUNDS"); do
	locks="rcu none"
	if [ $((r % 2)) -eq 0 ]; then locks="none rcu"; fi
	for lock in $locks; do
		"$bin" -test.run '^$' -test.bench "Walk/lock=$lock/op=(files|missing|resolve)" \
			-test.cpu 1,2 -test.benchtime 200000x | grep '^Benchmark' >>"$OUT"
	done
	"$bin" -test.run '^$' -test.bench 'Suspect/part=ceiling' -test.cpu 1,2 -test.benchtime 2000000x |
		grep '^Benchmark' >>"$OUT"
	echo "round $r/$ROUNDS done" >&2
done
awk '
function median(name,   n, i, j, t, v) {
	n = split(vals[name], v, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ vals[$1] = vals[$1] " " $3 }
END {
	printf "%-42s %10s %10s %9s\n", "rcu, -cpu 1 -> 2 (median of '"$ROUNDS"')", "ns/op@1", "ns/op@2", "speed-up"
	split("files missing resolve", ops, " ")
	for (k = 1; k <= 3; k++) for (g = 1; g <= 2; g++) {
		v = "BenchmarkWalk/lock=rcu/op=" ops[k] "/parallel" (g == 2 ? "/goroutines=48" : "")
		a = median(v); b = median(v "-2")
		printf "%-42s %10.1f %10.1f %8.2fx%s\n", substr(v, 24), a, b, a / b, (a / b >= 1.9 ? "" : "  (target 1.9x)")
	}
	split("ceiling ceiling/loads", cs, " ")
	for (k = 1; k <= 2; k++) {
		v = "BenchmarkSuspect/part=" cs[k] "/parallel"
		a = median(v); b = median(v "-2")
		printf "%-42s %10.1f %10.1f %8.2fx  (the machine)\n", substr(v, 18), a, b, a / b
	}
	printf "\n%-42s %10s %10s %9s\n", "one thread (-cpu 1, serial)", "rcu ns/op", "none ns/op", "rcu/none"
	for (k = 1; k <= 3; k++) {
		a = median("BenchmarkWalk/lock=rcu/op=" ops[k]); b = median("BenchmarkWalk/lock=none/op=" ops[k])
		printf "%-42s %10.1f %10.1f %8.2fx%s\n", "op=" ops[k], a, b, a / b, (a / b <= 1.10 ? "" : "  (target 1.10x)")
	}
}' "$OUT"
