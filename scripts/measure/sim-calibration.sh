#!/usr/bin/env bash
# The calibrated sim against the kernel (README, "A calibrated sim"):
# scaling efficiency at 2, 8 and 48 threads, files and missing, of
#   sys             the real /sys (kernfs on an rwsem in Linux 5.15+)
#   sim-calibrated  the sim under rwsem with the kernel's work outside the
#                   lock (--sim-cost auto: calibrated against /sys, single
#                   thread, at the start of each round)
#   sim-bare        the sim under rwsem alone
# ROUNDS rounds (default 5), each one compare of sys and the calibrated sim
# then one of the bare sim, so the three interleave; medians per cell, and
# |calibrated - sys| against the target of 0.1. Run it on a quiet machine:
# uptime comes first so a loaded run shows. Raw benchmark lines are kept in
# $OUT (default /tmp/sim-calibration.txt). /sys rows do 2000 operations per
# worker, sim rows 10000 (a calibrated 48-thread sim cell is about a second).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
OUT=${OUT:-/tmp/sim-calibration.txt}
THREADS=${THREADS:-2,8,48}
uptime
bin=$(mktemp -d)/loadgen
go build -o "$bin" ./cmd/loadgen
: >"$OUT"
common=(--locks rwsem --threads "$THREADS" --ops files,missing --times 2000 --sim-times 10000 --repeats 1 --format bench)
for r in $(seq "$ROUNDS"); do
	"$bin" compare --targets sim,sys --sim-cost auto "${common[@]}" |
		grep '^Benchmark' | sed 's|/target=sim/|/target=sim-calibrated/|' >>"$OUT"
	"$bin" compare --targets sim "${common[@]}" |
		grep '^Benchmark' | sed 's|/target=sim/|/target=sim-bare/|' >>"$OUT"
	echo "round $r/$ROUNDS done" >&2
done
awk '
function key(name, k,   m) { return match(name, "/" k "=[^/]*") ? substr(name, RSTART + length(k) + 2, RLENGTH - length(k) - 2) : "" }
function median(s,   n, v, i, j, t) {
	n = split(s, v, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) if ($(i + 1) == "efficiency") e = $i
	c = key(name, "op") SUBSEP key(name, "threads"); eff[key(name, "target"), c] = eff[key(name, "target"), c] " " e
	if (!(c in seen)) { seen[c] = 1; cells[++n] = c }
}
END {
	printf "%-8s %8s %8s %15s %9s %11s\n", "op", "threads", "sys", "sim-calibrated", "sim-bare", "|cal - sys|"
	for (k = 1; k <= n; k++) {
		split(cells[k], p, SUBSEP)
		s = median(eff["sys", cells[k]]); c = median(eff["sim-calibrated", cells[k]]); b = median(eff["sim-bare", cells[k]])
		d = c - s; if (d < 0) d = -d
		printf "%-8s %8s %8.2f %15.2f %9.2f %11.2f%s\n", p[1], p[2], s, c, b, d, (d <= 0.1 ? "" : "  (target 0.1)")
	}
}' "$OUT"
