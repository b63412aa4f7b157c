#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every
# test (unit, multi-process, multi-host in network namespaces) with ctest,
# the sanitizer and fuzz jobs (scripts/sanitize.sh), then the PyTorch
# backend's tests (pytest) in the project's .venv. The soak test is separate
# (ctest --test-dir build -L soak).
set -euo pipefail
cd "$(dirname "$0")/.."
# Prints how long the step just ended took: CI's log shows where its 30 minutes go.
took() { echo "== test.sh: $1 took $((SECONDS - step)) s ($SECONDS s in all)"; step=$SECONDS; }
step=$SECONDS
scripts/setup.sh test
took setup
scripts/build.sh
took build
scripts/run_ctest.sh build -LE soak "$@"
took ctest
# Sanitizers (ASan + UBSan, TSan) and fuzzing: scripts/sanitize.sh.
if [ "${STRATA_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/sanitize.sh
  took sanitizers
fi
if [ "${STRATA_SKIP_TORCH_TESTS:-0}" != 1 ]; then
  python=$(scripts/torch_plugin.sh)
  took "torch venv and plugin"
  "$python" -m pytest -q --durations=8 plugins/torch/tests
  took "torch tests"
fi
