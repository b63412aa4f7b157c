#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every
# test (unit, multi-process, multi-host in network namespaces) with ctest,
# the sanitizer and fuzz jobs (scripts/sanitize.sh), then the PyTorch
# backend's tests (pytest) in the project's .venv. The soak test is separate
# (ctest --test-dir build -L soak).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
scripts/build.sh
scripts/run_ctest.sh build -LE soak "$@"
# Sanitizers (ASan + UBSan, TSan) and fuzzing: scripts/sanitize.sh.
if [ "${STRATA_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/sanitize.sh
fi
if [ "${STRATA_SKIP_TORCH_TESTS:-0}" != 1 ]; then
  python=$(scripts/torch_plugin.sh)
  "$python" -m pytest -q plugins/torch/tests
fi
