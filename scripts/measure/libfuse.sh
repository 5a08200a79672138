#!/usr/bin/env bash
# kernfsim's io_uring transport against libfuse's own (3.18.2, the
# reference server of ../shared/anchors/libfuse, built as its README says
# into /tmp/chain_ll), with one C client (chain-client.c), interleaved
# ROUNDS times: files and missing at 1, 2 and 8 threads. Needs root and
# enable_uring=Y. Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
CHAIN=${CHAIN:-/tmp/chain_ll}
[ -x "$CHAIN" ] || { echo "no $CHAIN: build it as ../shared/anchors/libfuse/README.md says" >&2; exit 2; }
go build -o bin/ ./cmd/kernfsim
gcc -O2 -pthread -o bin/chain-client scripts/measure/chain-client.c
# VARIANT, if set, is an environment for a second kernfsim server
# (say GOMAXPROCS=4), measured beside the first as kernfsim-variant.
mnt_k=$(mktemp -d) mnt_l=$(mktemp -d) mnt_v=$(mktemp -d)
bin/kernfsim mount "$mnt_k" --lock "${LOCK:-rcu}" --transport uring > /tmp/kernfsim-serve.log 2>&1 & kpid=$!
"$CHAIN" "$mnt_l" -o io_uring > /tmp/libfuse-serve.log 2>&1 & lpid=$!
servers="kernfsim libfuse" vpid=
if [ -n "${VARIANT:-}" ]; then
	env $VARIANT bin/kernfsim mount "$mnt_v" --lock "${LOCK:-rcu}" --transport uring > /tmp/kernfsim-variant.log 2>&1 & vpid=$!
	servers="kernfsim libfuse kernfsim-variant"
fi
trap 'kill $kpid $lpid $vpid 2>/dev/null; wait 2>/dev/null; rmdir "$mnt_k" "$mnt_l" "$mnt_v"' EXIT
for _ in $(seq 50); do grep -q serving /tmp/kernfsim-serve.log && grep -q serving /tmp/libfuse-serve.log &&
	{ [ -z "$vpid" ] || grep -q serving /tmp/kernfsim-variant.log; } && break; sleep 0.1; done
uptime
for round in $(seq "${ROUNDS:-5}"); do
	for op in files missing; do
		for threads in ${THREADS:-1 2 8}; do
			for server in $servers; do
				case $server in libfuse) mnt=$mnt_l ;; kernfsim-variant) mnt=$mnt_v ;; *) mnt=$mnt_k ;; esac
				echo "round=$round server=$server op=$op $(bin/chain-client "$mnt" $op "$threads" "${TIMES:-3000}")"
			done
		done
	done
done
uptime
