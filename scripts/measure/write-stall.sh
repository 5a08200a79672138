#!/usr/bin/env bash
# How long a store that waits (delete_device under --lock rcu --gp normal,
# which waits a grace period) holds up other requests from its CPU: a
# reader pinned to CPU 0 stats a file in a loop while a writer pinned to
# the same CPU deletes 5 devices; prints the reader's longest stat, per
# transport and grace-period tick, two interleaved rounds. Run as root
# from the repository root, with enable_uring on; about a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"
uptime
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/kernfsim
reader='
import os, sys, time
os.sched_setaffinity(0, {0})
path, stop = sys.argv[1], sys.argv[2]
worst = 0.0
while not os.path.exists(stop):
    t = time.perf_counter(); os.stat(path); worst = max(worst, time.perf_counter() - t)
print("%.1f ms" % (worst * 1e3))
'
one() { # transport tick
	local mnt=$bin/mnt stop=$bin/stop
	mkdir -p "$mnt"; rm -f "$stop"
	"$bin/kernfsim" mount "$mnt" --lock rcu --gp normal --gp-tick "$2" --transport "$1" >/dev/null 2>&1 &
	local srv=$!
	until [ -e "$mnt/bus/kernfsim/new_device" ]; do sleep 0.05; done
	for i in 1 2 3 4 5; do echo "stall$i" > "$mnt/bus/kernfsim/new_device"; done
	python3 -c "$reader" "$mnt/devices/system/cpu/cpu0/topology/core_id" "$stop" > "$bin/worst" &
	local rd=$!
	sleep 0.5
	taskset -c 0 sh -c "for i in 1 2 3 4 5; do echo stall\$i > $mnt/bus/kernfsim/delete_device; done"
	sleep 0.5; touch "$stop"; wait $rd
	printf '%-8s --gp-tick %-6s reader worst stat %s\n' "$1" "$2" "$(cat "$bin/worst")"
	kill -TERM $srv; wait $srv || true
}
for round in 1 2; do
	for tick in 4ms 200ms; do
		for tp in uring devfuse; do one $tp $tick; done
	done
done
