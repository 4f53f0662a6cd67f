#!/usr/bin/env bash
# Install everything the tests need, then run the linters CI runs and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh --dev
./scripts/install_vscode.sh   # npm packages, Chromium and code-server for the VS Code tests
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/pytest -q -p no:cacheprovider "$@"
