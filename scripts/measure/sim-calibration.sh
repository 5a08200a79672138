#!/usr/bin/env bash
# The calibrated sim against the kernel (docs/performance.md; the study:
# docs/notes/2026-12-01-calibrated-sim.md):
# scaling efficiency at 2, 8 and 48 threads, files and missing, of
#   sys             the real /sys (kernfs on an rwsem in Linux 5.15+)
#   sim-calibrated  the sim under rwsem with the kernel's work outside the
#                   lock (--sim-cost auto: calibrated against /sys, single
#                   thread, at the start of each round)
#   sim-bare        the sim under rwsem alone
# ROUNDS rounds (default 5), each one compare of sys and the calibrated sim
# then one of the bare sim, so the three interleave; medians per cell, and
# |calibrated - sys| against the target of 0.1, both as the difference of
# the medians and as the median of each round's own difference (/sys's
# efficiency moves within minutes on a VM, and the sim's with it, so the
# rounds' pairs are the fairer comparison). Run it on a quiet machine:
# uptime comes first so a loaded run shows. Raw benchmark lines, each after
# its round number, are kept in $OUT (default /tmp/sim-calibration.txt).
# Every row does 10000 operations per worker (a calibrated 48-thread cell
# is about a second).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
OUT=${OUT:-/tmp/sim-calibration.txt}
THREADS=${THREADS:-2,8,48}
uptime
bin=$(mktemp -d)/loadgen
go build -o "$bin" ./cmd/loadgen
: >"$OUT"
common=(--locks rwsem --threads "$THREADS" --ops files,missing --times 10000 --sim-times 10000 --repeats 1 --format bench)
for r in $(seq "$ROUNDS"); do
	"$bin" compare --targets sim,sys --sim-cost auto "${common[@]}" |
		grep '^Benchmark' | sed "s|/target=sim/|/target=sim-calibrated/|; s|^|$r |" >>"$OUT"
	"$bin" compare --targets sim "${common[@]}" |
		grep '^Benchmark' | sed "s|/target=sim/|/target=sim-bare/|; s|^|$r |" >>"$OUT"
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
	round = $1; name = $2; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) if ($(i + 1) == "efficiency") e = $i
	c = key(name, "op") SUBSEP key(name, "threads"); tg = key(name, "target")
	eff[tg, c] = eff[tg, c] " " e; byRound[tg, c, round] = e
	if (!(c in seen)) { seen[c] = 1; cells[++n] = c }
	if (!(round in seenRound)) { seenRound[round] = 1; rounds[++nr] = round }
}
END {
	printf "%-8s %8s %8s %15s %9s %11s %13s\n", "op", "threads", "sys", "sim-calibrated", "sim-bare", "|cal - sys|", "paired |d|"
	for (k = 1; k <= n; k++) {
		split(cells[k], p, SUBSEP)
		s = median(eff["sys", cells[k]]); c = median(eff["sim-calibrated", cells[k]]); b = median(eff["sim-bare", cells[k]])
		d = c - s; if (d < 0) d = -d
		pd = ""
		for (j = 1; j <= nr; j++) {
			x = byRound["sim-calibrated", cells[k], rounds[j]] - byRound["sys", cells[k], rounds[j]]
			pd = pd " " (x < 0 ? -x : x)
		}
		m = median(pd)
		printf "%-8s %8s %8.2f %15.2f %9.2f %11.2f %13.2f%s\n", p[1], p[2], s, c, b, d, m, (d <= 0.1 && m <= 0.1 ? "" : "  (target 0.1)")
	}
}' "$OUT"
