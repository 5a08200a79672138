#!/usr/bin/env bash
# What the lock statistics cost the in-process walker: BenchmarkWalkCounting
# (locking/walk_bench_test.go), each strategy's sim per-op with counting on
# (hold times sampled 1 in 64), off, and exact (every hold timed), one
# thread and parallel, ROUNDS (default 5) interleaved rounds of one run
# each; prints each configuration's median ns/op and on/off, exact/off.
# Run it on a quiet machine: uptime comes first so a loaded run shows.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
ROUNDS=${ROUNDS:-5}
LOCKS=${LOCKS:-mutex|rwsem|rcu|kernfs64|percpu|bravo}
uptime
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/locking.test" ./locking/
for _ in $(seq "$ROUNDS"); do
	"$dir/locking.test" -test.run '^$' -test.bench "WalkCounting/lock=($LOCKS)/stats=(on|off|exact)/op=(files|missing)" \
		-test.benchtime 200000x -test.cpu 2 | grep '^Benchmark' >>"$dir/walk.txt"
done
awk '{
	name = $1; sub(/-[0-9]+$/, "", name)
	split(name, p, "/"); key = p[2] "/" p[4] (p[5] != "" ? "/" p[5] : ""); stats = p[3]
	v[key, stats] = v[key, stats] " " $3; keys[key] = 1
}
function med(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "%-36s %10s %10s %10s %8s %8s\n", "config (median ns/op)", "off", "on", "exact", "on/off", "exact/off"
	for (k in keys) {
		off = med(v[k, "stats=off"]); on = med(v[k, "stats=on"]); ex = med(v[k, "stats=exact"])
		printf "%-36s %10.1f %10.1f %10.1f %8.3f %8.3f\n", k, off, on, ex, on / off, ex / off
	}
}' "$dir/walk.txt" | sort
uptime
