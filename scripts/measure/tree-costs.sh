#!/usr/bin/env bash
# What a tree costs to make: the 1M-node synthetic build
# (BenchmarkBuild), loading an archive in each compression
# (BenchmarkLoadArchive), and mirroring this machine's /sys
# (BenchmarkMirrorHost) beside the system calls alone
# (BenchmarkMirrorHostFloor), for this checkout and for BASE (a commit),
# interleaved ROUNDS times, then benchstat's medians and ratios. A
# benchmark BASE lacks shows for this checkout only. Run it on an
# otherwise idle machine; it prints the load before and after.
#
#   BASE=9351ec7 ROUNDS=5 scripts/measure/tree-costs.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
BASE=${BASE:-9351ec7}
ROUNDS=${ROUNDS:-5}
out=$(mktemp -d)
cleanup() {
	git worktree remove --force "$out/base" 2>/dev/null || true
	if [ -n "${KEEP:-}" ]; then echo "raw results in $out" >&2; else rm -rf "$out"; fi
}
trap cleanup EXIT
git worktree add --detach "$out/base" "$BASE" > /dev/null
# A BASE from before BenchmarkMirrorHost gets it (it calls only
# MirrorHost, which every build has).
[ -e "$out/base/sysfs/host_bench_test.go" ] || cp sysfs/host_bench_test.go "$out/base/sysfs/"
go test -c -o "$out/new.test" ./sysfs/
(cd "$out/base" && go test -c -o "$out/base.test" ./sysfs/)
# name, benchtime
benches=("${BUILD:-Build/nodes=1000000/lock=rcu$}" 1x 'LoadArchive' 5x 'MirrorHost' 5x)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
	for build in base new; do
		for ((i = 0; i < ${#benches[@]}; i += 2)); do
			(cd sysfs && "$out/$build.test" -test.run '^$' -test.bench "${benches[i]}" \
				-test.benchtime "${benches[i + 1]}" -test.benchmem) >> "$out/$build.txt"
		done
	done
	echo "round $round of $ROUNDS done, load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
go run golang.org/x/perf/cmd/benchstat "base=$out/base.txt" "new=$out/new.txt"
