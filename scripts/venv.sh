#!/usr/bin/env bash
# Creates (once) the project's Python environment in .venv with torch, numpy,
# matplotlib, pytest, expecttest (torch's own test suite imports it:
# plugins/torch/tests/torch_suite.py) and accelerate (Hugging Face Accelerate,
# run on strata by the torch tier) from PyPI; later runs only check it.
# Prints its python.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import torch, numpy, matplotlib, pytest, expecttest, accelerate" 2>/dev/null; then
  echo "venv: installing torch numpy matplotlib pytest expecttest accelerate (first time only, a few GB)" >&2
  .venv/bin/pip install -q --disable-pip-version-check torch numpy matplotlib pytest expecttest accelerate >&2
fi
echo "$PWD/.venv/bin/python"
