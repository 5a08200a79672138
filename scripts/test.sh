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

# Every test binary runs under tools/fuseguard: a binary stuck in FUSE (a
# client thread waiting for its own dead server cannot be killed, and go
# test would wait for it forever) has its FUSE connections aborted 20 s
# past its -timeout, or 3 s after it began to exit, and fails with its
# stacks printed, instead of hanging the suite.
guard_dir=$(mktemp -d)
trap 'rm -rf "$guard_dir"' EXIT
go build -o "$guard_dir/fuseguard" ./tools/fuseguard
guard=(-timeout 10m -exec "$guard_dir/fuseguard")

go test -race -count=1 "${guard[@]}" ./...
GOMAXPROCS=1 go test -count=1 "${guard[@]}" -run 'Torture|Grace|Differential|CreateDeleteRace|LookupsAgainstMkdirRmdir' ./locking/ ./kernfsim/ ./sysfs/

# The soak for a minute (the go test above runs 15 s of it): each lock mode
# must end with no unexpected errno, server RSS and goroutines near their
# level after warm-up, and the nodeid table back to baseline after
# drop_caches. Without -race, so that it measures the real server.
KERNFSIM_SOAK=60s go test -count=1 "${guard[@]}" -run '^TestSoak$' ./tests/

# Each fuzz target briefly (its seed corpus also runs in the go test above),
# for a count of executions, about 10 s each on a quiet 2-CPU machine. Not a
# duration: with -fuzztime 10s, Go 1.26's coordinator can report the
# deadline itself as a failure ("context deadline exceeded", no failing
# input) when a worker is mid-call as it passes, which a loaded machine
# makes likely (go.dev/issue/75804, fixed in Go 1.27).
for target in kernfsim:FuzzValidateName:500000 sysfs:FuzzControlFiles:2000 sysfs:FuzzWalk:400000 sysfs:FuzzArchive:20000 sysfs:FuzzTarReader:50000 sysfs:FuzzBzip2Parallel:2000 \
	cmd/kernfsim:FuzzArgs:40000 cmd/loadgen:FuzzArgs:20000; do
	IFS=: read -r pkg name count <<<"$target"
	go test -run '^$' -fuzz "^$name\$" -fuzztime "${count}x" -fuzzminimizetime 200x "./$pkg/"
done
