#!/usr/bin/env bash
# kernfsim's io_uring transport against libfuse's own (3.18.2, the
# reference server of ../shared/anchors/libfuse, built as its README says
# into /tmp/chain_ll), with one C client (chain-client.c), interleaved
# ROUNDS times, then the median of each cell. Needs root and
# enable_uring=Y. Run on an otherwise idle machine, and give the load it
# prints with the figures.
#
#   ROUNDS=5 TIMES=3000 THREADS="1 2 4 8 48" OPS=files PIN= scripts/measure/libfuse.sh
#
# libfuse runs at its default queue depth (8) and at kernfsim's (4).
# chainfs (tools/chainfs) is the reference server's logic in Go over
# kernfsim's io_uring transport: the transport alone, without the tree.
# PIN=-p pins client thread i to CPU i (the server's work per request,
# without the client's migrations). VARIANT (an environment, say
# GOMAXPROCS=4) and VARIANT_ARGS (mount flags, say --uring-defer-taskrun),
# if either is set, make a second kernfsim server measured beside the
# first as kernfsim-variant; CHAINFS_VARIANT_ARGS (say --defer-taskrun)
# does the same for chainfs; KERNFSIM_BASE, if set, is another kernfsim
# binary measured beside it as kernfsim-base.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
CHAIN=${CHAIN:-/tmp/chain_ll}
[ -x "$CHAIN" ] || { echo "no $CHAIN: build it as ../shared/anchors/libfuse/README.md says" >&2; exit 2; }
go build -o bin/ ./cmd/kernfsim ./tools/chainfs
gcc -O2 -pthread -o bin/chain-client scripts/measure/chain-client.c
logs=$(mktemp -d)
declare -A mnt pid
start() { # name command...
	local name=$1
	shift
	mnt[$name]=$(mktemp -d)
	"$@" "${mnt[$name]}" > "$logs/$name.log" 2>&1 &
	pid[$name]=$!
}
kernfsim() { bin/kernfsim mount "$1" --lock "${LOCK:-rcu}" --transport uring; }
start kernfsim kernfsim
start libfuse "$CHAIN" -o io_uring
start libfuse-d4 "$CHAIN" -o io_uring -o io_uring_q_depth=4
start chainfs bin/chainfs --transport uring
servers="kernfsim chainfs libfuse libfuse-d4"
if [ -n "${VARIANT:-}${VARIANT_ARGS:-}" ]; then
	start kernfsim-variant env ${VARIANT:-} bin/kernfsim mount --lock "${LOCK:-rcu}" --transport uring ${VARIANT_ARGS:-}
	servers="$servers kernfsim-variant"
fi
if [ -n "${CHAINFS_VARIANT_ARGS:-}" ]; then
	start chainfs-variant bin/chainfs --transport uring $CHAINFS_VARIANT_ARGS
	servers="$servers chainfs-variant"
fi
if [ -n "${KERNFSIM_BASE:-}" ]; then
	start kernfsim-base "$KERNFSIM_BASE" mount --lock "${LOCK:-rcu}" --transport uring
	servers="$servers kernfsim-base"
fi
cleanup() {
	kill "${pid[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	for m in "${mnt[@]}"; do umount -l "$m" 2>/dev/null || true; rmdir "$m"; done
	rm -r "$logs"
}
trap cleanup EXIT
for name in $servers; do
	for _ in $(seq 50); do grep -q serving "$logs/$name.log" && break; sleep 0.1; done
	grep -q serving "$logs/$name.log" || { echo "$name did not start:" >&2; cat "$logs/$name.log" >&2; exit 1; }
done
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$logs/rounds
for round in $(seq "${ROUNDS:-5}"); do
	for op in ${OPS:-files}; do
		for threads in ${THREADS:-1 2 4 8 48}; do
			for server in $servers; do
				echo "round=$round server=$server op=$op $(bin/chain-client ${PIN:-} "${mnt[$server]}" $op "$threads" "${TIMES:-3000}")"
			done
		done
	done
done | tee "$out"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# The median of each cell's aggregate per-op, and its ratio to libfuse
# at the same depth as kernfsim (libfuse-d4).
awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	k = f["op"] " " f["threads"]; v[k, f["server"]] = v[k, f["server"]] " " f["aggregate"] + 0; keys[k] = 1; srv[f["server"]] = 1 }
	END { for (k in keys) for (s in srv) print k, s, v[k, s] }' "$out" |
	python3 -c '
import sys, statistics
rows = {}
for line in sys.stdin:
    op, threads, server, *vals = line.split()
    rows.setdefault((op, int(threads)), {})[server] = statistics.median(map(float, vals))
print("median aggregate µs per op (x libfuse-d4)")
for (op, threads), cells in sorted(rows.items()):
    ref = cells.get("libfuse-d4")
    print(f"{op:8s} threads={threads:<3d}", "  ".join(f"{s}={m:.1f}" + (f" (x{m/ref:.2f})" if ref else "") for s, m in sorted(cells.items())))
'
