#!/bin/bash
# Instructions per request of the server's handlers, without FUSE, by
# handler and by lock class: BenchmarkServeOp (six LOOKUPs, OPEN, READ,
# RELEASE) and BenchmarkServeGetattr under callgrind at two iteration
# counts; the difference over 40,000 iterations is one op's count, with
# set-up cancelled. Deterministic: load does not change the counts.
#
#   ./scripts/measure/serveop-callgrind.sh            # this checkout
#   TEST=/path/to/fusefs.test ./scripts/measure/serveop-callgrind.sh
#
# Env: LOCK (rcu), N1 (20000), N2 (60000), OUT (a temporary directory).
# Needs valgrind and python3. Figures:
# docs/notes/2026-12-07-where-each-microsecond-goes.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
lock=${LOCK:-rcu} n1=${N1:-20000} n2=${N2:-60000}
out=${OUT:-$(mktemp -d)}
test=${TEST:-$out/fusefs.test}
if [ -z "${TEST:-}" ]; then
  go test -c -o "$test" ./fusefs/
fi
for bench in ServeOp ServeGetattr; do
  for n in "$n1" "$n2"; do
    (cd fusefs && GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind \
      --callgrind-out-file="$out/$bench-$n.out" "$test" -test.run x \
      -test.bench "$bench/lock=$lock\$" -test.benchtime "${n}x" >"$out/$bench-$n.log" 2>&1)
  done
  echo "## Benchmark$bench/lock=$lock"
  python3 "$root/scripts/measure/callgrind_perop.py" "$out/$bench-$n1.out" "$out/$bench-$n2.out" "$n1" "$n2"
done
echo "callgrind files: $out"
