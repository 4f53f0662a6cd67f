#!/usr/bin/env bash
# Create .venv (if missing) and install Engram into it; with --dev also the test tools and
# the semantic extra (the tests run the real embedding model).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
if [ "${1:-}" = "--dev" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev,semantic]"
else
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
fi
# An editable install leaves Engram's own modules uncompiled; where Python may not write
# bytecode (PYTHONDONTWRITEBYTECODE) every process would compile them again at start-up.
.venv/bin/python -m compileall -q engram_ls >/dev/null
