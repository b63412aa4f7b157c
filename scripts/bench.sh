#!/usr/bin/env bash
# The README's comparison command: installs what is missing (Open MPI, iperf3,
# the Python environment with torch and matplotlib), builds, and runs one
# comparison scenario, writing docs/benchmarks/<scenario>.md and its plots.
#   scripts/bench.sh local [--np 2] [--reps 3]
#   scripts/bench.sh netns [--rate 2gbit] [--reps 3]     (needs root)
#   scripts/bench.sh gpu [--np 1] [--reps 3]              (needs an NVIDIA GPU; on the
#     device tool's machine, which has no network: scripts/gpu-check.sh compare)
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:?usage: scripts/bench.sh local|netns|gpu [options]}
shift
scripts/setup.sh bench
python=$(scripts/venv.sh)
scripts/build.sh
exec "$python" bench/compare.py "$scenario" "$@"
