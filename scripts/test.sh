#!/usr/bin/env bash
# The whole test suite: formatting, vet, the race detector on every
# package, and the concurrency tests again on one P (GOMAXPROCS=1).
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted (run gofmt -w on them)" >&2
	exit 1
fi
go vet ./...
go test -race -count=1 ./...
GOMAXPROCS=1 go test -count=1 -run 'Torture|Grace|Differential' ./locking/ ./kernfsim/

# Each fuzz target briefly (its seed corpus also runs in the go test above).
for target in FuzzControlFiles FuzzWalk FuzzValidateName; do
	go test -run '^$' -fuzz "^${target}\$" -fuzztime 10s -fuzzminimizetime 2s ./kernfsim/
done
