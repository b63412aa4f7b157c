#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every
# test (unit, multi-process, multi-host in network namespaces) with ctest,
# then the PyTorch backend's tests (pytest) in the project's .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900 "$@"
if [ "${STRATA_SKIP_TORCH_TESTS:-0}" != 1 ]; then
  python=$(scripts/torch_plugin.sh)
  "$python" -m pytest -q plugins/torch/tests
fi
