#!/usr/bin/env bash
# Where the server's contended wait goes, per transport: a Go mutex
# profile of `kernfsim mount --lock L --pprof` under 8 loadgen clients,
# and the server's goroutine and thread counts at the end of the run.
# Needs root and enable_uring=Y. Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
uptime
go build -o bin/ ./cmd/...
for lock in ${LOCKS:-mutex rcu}; do
	for tp in devfuse uring; do
		mnt=$(mktemp -d)
		bin/kernfsim mount "$mnt" --lock "$lock" --transport "$tp" --pprof 127.0.0.1:6061 >/dev/null 2>&1 &
		pid=$!
		until grep -q " $mnt fuse" /proc/mounts; do sleep 0.05; done
		curl -s -o /dev/null "http://127.0.0.1:6061/debug/pprof/mutex?seconds=0" || true
		bin/loadgen --path "$mnt" --threads "${THREADS:-8}" --times "${TIMES:-3000}" >/dev/null
		echo "== lock=$lock transport=$tp: goroutines $(awk '/server.goroutines/{print $2}' "$mnt/kernel/kernfsim/stats"), threads $(awk '/^Threads/{print $2}' /proc/$pid/status)"
		go tool pprof -top -nodecount=12 http://127.0.0.1:6061/debug/pprof/mutex 2>/dev/null | sed -n '/flat%/,$p' | head -14
		kill -TERM $pid; wait $pid || true
		rmdir "$mnt"
	done
done
uptime
