#!/usr/bin/env bash
# The README's benchmark command: installs what is missing, builds, and runs
# strata-perf all_reduce with 2 local ranks, 16 B to 64 MiB (extra arguments are passed on).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
scripts/build.sh
exec build/bench/strata-perf all_reduce -np 2 -b 16 -e 64M -f 4 -n 200 -w 20 "$@"
