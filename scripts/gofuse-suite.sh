#!/usr/bin/env bash
# gofuse-suite.sh runs go-fuse's own tests of every package that mounts,
# twice: over /dev/fuse as go-fuse serves it, and with every mount handed
# to uring.NewServer (over the rings only). It compares pass/fail per
# top-level test and exits 1 if a test that passes over /dev/fuse does
# not pass over the rings (fails, hangs, is skipped or never reports),
# again when run alone twice more, and is not listed in
# scripts/gofuse-suite/known.txt; 2 if it cannot run at all (no go-fuse,
# a package does not build).
#
# go-fuse is copied from the module cache (go mod download: no network
# beyond the module proxy) to a temporary directory, patched with
# scripts/gofuse-suite/server.patch (a package-level fuse.NewServerHook,
# and Server.SetOuter so that the hooked server's Serve, Wait, Unmount and
# WaitMount are uring.Server's), and given one test file per package
# (scripts/gofuse-suite/hook_test.go.in) that sets the hook when
# GOFUSE_SUITE_URING is set. A go.work joins that copy and this checkout.
#
# Test binaries run with -test.v=test2json: verbose results, but not
# the debug logs go-fuse's tests turn on under -test.v. Every test binary
# runs under tools/fuseguard with -test.timeout, inside
# timeout(1): a package that hangs is cut, its unfinished tests are
# reported as HANG, and the script goes on.
#
# Needs root and /dev/fuse (and io_uring for the second run). Settings:
#   GOFUSE_SUITE_PKGS     packages to run (default: every mounting one)
#   GOFUSE_SUITE_TIMEOUT  -test.timeout per package and run (default 300s)
#   GOFUSE_SUITE_RUN      -test.run pattern (default: all)
#   GOFUSE_SUITE_KEEP=1   keep the temporary directory (logs) and say where
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/scripts/gofuse-suite
version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/hanwen/go-fuse/v2)
pkgs=${GOFUSE_SUITE_PKGS:-fs fuse fuse/test fuse/nodefs fuse/pathfs zipfs newunionfs benchmark}
ptimeout=${GOFUSE_SUITE_TIMEOUT:-300s}
run=${GOFUSE_SUITE_RUN:-.}

die() { echo "gofuse-suite: $*" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gofuse-suite.XXXXXX") || die "mktemp failed"
if [ "${GOFUSE_SUITE_KEEP:-}" = 1 ]; then
	trap 'echo "gofuse-suite: logs kept in $work" >&2' EXIT
else
	trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
fi

# prepare copies go-fuse, patches it and builds every test binary into
# $work/bin.
prepare() {
	local src
	src=$(cd "$root" && go mod download -json "github.com/hanwen/go-fuse/v2@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$src" ] || die "go-fuse $version not in the module cache and not downloadable"
	cp -r "$src" "$work/go-fuse" && chmod -R u+w "$work/go-fuse" || die "copy of $src failed"
	patch -s -p1 -d "$work/go-fuse" <"$here/server.patch" || die "server.patch does not apply to go-fuse $version"
	(cd "$work/go-fuse" && go mod download) || die "go mod download of go-fuse's dependencies failed"
	(cd "$work" && go work init ./go-fuse "$root") || die "go work init failed"
	go build -o "$work/fuseguard" "$root/tools/fuseguard" || die "fuseguard does not build"
	mkdir -p "$work/bin"
	local p name
	for p in $pkgs; do
		name=$(grep -h '^package ' "$work/go-fuse/$p"/*.go | grep -v '_test$' | head -1 | awk '{print $2}')
		[ -n "$name" ] || die "no package in $p"
		sed "s/^package PKG_test$/package ${name}_test/" "$here/hook_test.go.in" >"$work/go-fuse/$p/zz_kernfsim_uring_hook_test.go"
		(cd "$work/go-fuse/$p" && GOWORK="$work/go.work" go test -c -o "$work/bin/$(slug "$p").test" .) ||
			die "go-fuse's $p tests do not build with the hook"
	done
}

slug() { echo "$1" | tr / _; }

# runpkg runs package $2's tests in mode $1 (devfuse or uring) and writes
# "pkg Test STATUS" lines to $work/$1.results. A run cut by a hang is
# started again with the tests that have not reported yet, the hung ones
# left out, up to three times.
runpkg() {
	local mode=$1 p=$2 bin="$work/bin/$(slug "$2").test" try pattern=$run todo
	local out="$work/$mode.$(slug "$p").results"
	: >"$out"
	for try in 1 2 3 4; do
		runonce "$mode" "$p" "$try" "$pattern" >>"$out"
		grep -q ' HANG$' "$out" || break
		todo=$( (cd "$work/go-fuse/$p" && "$bin" -test.list "$run" 2>/dev/null) | grep '^Test' |
			grep -vxF -f <(awk '{print $2}' "$out") | paste -sd'|')
		[ -n "$todo" ] || break
		pattern="^($todo)\$"
	done
	cat "$out" >>"$work/$mode.results"
}

# runonce runs package $2's tests matching $4 once, as try $3, under
# fuseguard and timeout(1), and prints "pkg Test STATUS" per top-level
# test: PASS, FAIL, SKIP, or HANG for one that started and never ended.
runonce() {
	local mode=$1 p=$2 log="$work/$1.$(slug "$2").$3.log" env=(GOFUSE_SUITE_MODE="$1")
	[ "$mode" = uring ] && env+=(GOFUSE_SUITE_URING=1)
	local secs=${ptimeout%s}
	(cd "$work/go-fuse/$p" && env "${env[@]}" timeout -k 30 $((secs + 120)) \
		"$work/fuseguard" "$work/bin/$(slug "$p").test" -test.v=test2json -test.count=1 \
		-test.timeout="$ptimeout" -test.run="$4" >"$log" 2>&1)
	local rc=$?
	awk -v pkg="$p" '
		{ sub(/^\026/, "") }
		/^=== RUN   Test[^\/]*$/ { started[$3] = 1 }
		/^--- (PASS|FAIL|SKIP): Test[^\/ ]* / { sub(":", "", $2); status[$3] = $2 }
		END {
			for (t in started) print pkg, t, (t in status) ? status[t] : "HANG"
			for (t in status) if (!(t in started)) print pkg, t, status[t]
		}' "$log"
	case $rc in
	0 | 1) ;;
	124 | 137) echo "gofuse-suite: $mode $p: cut after $((secs + 120))s (log: $log)" >&2 ;;
	*) echo "gofuse-suite: $mode $p: exit status $rc (log: $log)" >&2 ;;
	esac
}

prepare
for mode in devfuse uring; do
	: >"$work/$mode.results"
	for p in $pkgs; do
		echo "gofuse-suite: $mode $p" >&2
		runpkg "$mode" "$p"
	done
done

# compare joins the two runs ($1, $2: sorted results): every test whose
# status differs, marked "known" if known.txt lists it, "DIFF" if it
# passes over /dev/fuse and not over the rings, and a summary; it exits
# with the number of DIFFs (at most 1).
compare() {
	awk -v known="$here/known.txt" '
	BEGIN {
		while ((getline line < known) > 0) {
			sub(/#.*/, "", line)
			if (split(line, f, " ") >= 2) ok[f[1] " " f[2]] = 1
		}
	}
	FILENAME == ARGV[1] { dev[$1 " " $2] = $3; next }
	{ ur[$1 " " $2] = $3 }
	END {
		for (k in ur) if (!(k in dev)) dev[k] = "MISSING"
		for (k in dev) {
			d = dev[k]; u = (k in ur) ? ur[k] : "MISSING"
			total++
			if (d == "PASS") devpass++
			if (u == "PASS") urpass++
			if (d == u) continue
			bad = d == "PASS" || (d == "SKIP" && u != "PASS")
			tag = (k in ok) ? "known" : (bad ? "DIFF" : "better")
			printf "%-7s %-60s devfuse=%s uring=%s\n", tag, k, d, u
			if (tag == "DIFF") diffs++
		}
		printf "gofuse-suite: %d top-level tests; %d pass over /dev/fuse, %d over io_uring; %d differences\n", total, devpass, urpass, diffs
		exit (diffs > 0 ? 1 : 0)
	}' "$1" "$2"
}

sort -u "$work/devfuse.results" >"$work/devfuse.sorted"
sort -u "$work/uring.results" >"$work/uring.sorted"
compare "$work/devfuse.sorted" "$work/uring.sorted" | tee "$work/compare.txt"
# A difference counts only if it reproduces: each DIFF test runs again,
# alone, up to twice over the rings; one pass there makes it a flake of
# the loaded machine, reported as such (go-fuse's own tests wait with
# sleeps in places), not a failure.
failed=0
while read -r tag p t _; do
	[ "$tag" = DIFF ] || continue
	passed=
	for try in r1 r2; do
		status=$(runonce uring "$p" "$try" "^$t\$" | awk -v t="$t" '$2 == t { print $3 }')
		if [ "$status" = PASS ]; then passed=$try; break; fi
	done
	if [ -n "$passed" ]; then
		echo "flaky   $p $t: passed over the rings when run again alone ($passed)"
	else
		echo "FAILED  $p $t: does not pass over the rings when run again alone (twice)"
		failed=1
	fi
done <"$work/compare.txt"
exit $failed
