#!/usr/bin/env bash
# /dev/fuse against the per-CPU io_uring transport, same locks and options,
# rows interleaved by loadgen compare (median of --repeats, min-max shown).
# Needs root and enable_uring=Y. Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
uptime
go build -o bin/ ./cmd/...
cat /sys/module/fuse/parameters/enable_uring
bin/loadgen compare --targets kernfsim --transports devfuse,uring --locks "${LOCKS:-mutex,rwsem,rcu}" \
	--ops files,missing --threads "${THREADS:-1,2,8,48}" --times "${TIMES:-2000}" --repeats "${REPEATS:-3}" "$@"
uptime
