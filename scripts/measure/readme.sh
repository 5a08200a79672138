#!/usr/bin/env bash
# Regenerates the README's picture and the main job's figures on a quiet
# machine: docs/compare.svg from `loadgen compare --sim`, docs/compare.json
# (the same result, redrawable with `loadgen plot docs/compare.json -o FILE`)
# and docs/compare.txt, the main job's output. docs/performance.md quotes
# its header and op=missing table, and the README two of its rows. Run as
# root from the repository root; takes about 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"
uptime
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/loadgen
"$bin/loadgen" compare --sim --format json --out docs/compare.json --plot docs/compare.svg
"$bin/loadgen" compare --threads 1,2,8,48 --seed --out docs/compare.txt
echo "wrote docs/compare.svg, docs/compare.json, docs/compare.txt; paste its header and op=missing table into docs/performance.md (readme.sh) with the date and load above, and its kernfsim mutex and rwsem rows into README.md (Reading the output)"
