#!/usr/bin/env bash
# Checks the binding model (docs/performance.md, "Where each design
# binds") on this machine: loadgen compare of the bare sim, op files, under
# LOCKS (default mutex and rwsem), with every critical section of the tree
# lock lengthened by each of DELAYS (--lock-delay). For each lock and delay
# it prints the model's CPUs_bind (from the run at the largest thread
# count) beside the measured speedup of the largest thread count over one
# thread (ops/s over ops/s), capped by the CPUs. Where the model holds, the
# speedup follows min(threads, CPUs, CPUs_bind): mutex's read side excludes,
# so a delay makes it bind once CPUs_bind falls to the CPU count; rwsem's
# readers overlap inside the delay, so it should keep scaling.
# THREADS (default 1,2) may add 4,8,16 on a machine with more cores.
# Run it on a quiet machine: uptime comes first so a loaded run shows.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOCKS=${LOCKS:-mutex,rwsem}
DELAYS=${DELAYS:-0 250ns 500ns 1us 2us 4us 8us}
THREADS=${THREADS:-1,2}
REPEATS=${REPEATS:-3}
uptime
dir=$(mktemp -d)
go build -o "$dir/loadgen" ./cmd/loadgen
for d in $DELAYS; do
	"$dir/loadgen" compare --sim --locks "$LOCKS" --ops files --threads "$THREADS" --repeats "$REPEATS" \
		--lock-delay "$d" --format json --out "$dir/delay-$d.json"
done
python3 - "$dir" $DELAYS <<'PY'
import json, sys
d, delays = sys.argv[1], sys.argv[2:]
print("%-8s %-7s %10s %10s %12s %10s" % ("lock", "delay", "T(1)", "CPUs_bind", "speedup", "predicted"))
for delay in delays:
    j = json.load(open("%s/delay-%s.json" % (d, delay)))
    cpus, top = j["cpus"], max(j["threads"])
    for lock in sorted({c["target"]["lock"] for c in j["cells"]}):
        cells = {c["threads"]: c for c in j["cells"] if c["target"]["lock"] == lock}
        one, many = cells[min(cells)], cells[top]
        bind = (many.get("binding") or {}).get("bind_cpus")
        speedup = many["median"]["ops_per_sec"] / one["median"]["ops_per_sec"]
        pred = min(top, cpus, bind if bind is not None else float("inf"))
        print("%-8s %-7s %8.0fns %10s %12.2f %10.2f" % (lock, delay, one["median"]["single_per_op_ns"],
              "never" if bind is None else "%.2f" % bind, speedup, pred))
PY
