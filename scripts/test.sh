#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every
# test (unit, multi-process, multi-host in network namespaces) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900 "$@"
