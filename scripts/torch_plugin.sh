#!/usr/bin/env bash
# Installs strata_torch (plugins/torch) into the project's .venv, against the
# torch there and the libstrata in build/, when its sources or libstrata
# changed since the installed build; quick when nothing did. Prints the
# venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/venv.sh)
[ -f build/libstrata.so.0 ] || scripts/build.sh >&2
id=$( (cat build/libstrata.so.0 plugins/torch/setup.py plugins/torch/pyproject.toml
       find plugins/torch/csrc plugins/torch/strata_torch -name '*.cc' -o -name '*.h' -o -name '*.py' | sort | xargs cat) |
     sha256sum | cut -c1-16)
installed=$("$python" -c "import os, strata_torch; print(open(os.path.join(os.path.dirname(strata_torch.__file__), 'BUILD_ID')).read().strip())" 2>/dev/null || true)
if [ "$id" != "$installed" ]; then
  echo "torch_plugin: building and installing strata_torch ($id)" >&2
  echo "$id" > plugins/torch/strata_torch/BUILD_ID
  STRATA_BUILD_DIR=build MAX_JOBS=2 "$python" -m pip install -q --no-build-isolation --disable-pip-version-check \
    ./plugins/torch >&2
fi
echo "$python"
