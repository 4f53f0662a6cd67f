#!/usr/bin/env bash
# Install everything the tests need, then run the linters CI runs and the whole test suite.
#
# Under CI=true (or CI=1) the editor end-to-end tests are mandatory: their tools must install
# and the tests must run. Otherwise a tool that cannot be installed here (no root or apt-get
# for Chromium and the build packages, no Node, offline) is skipped with its reason, the tests
# that need it are skipped with theirs (listed at the end of pytest's output), and everything
# else runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh --dev
ci=${CI:-}
if [[ $ci == 1 || ${ci,,} == true ]]; then
  ./scripts/install_vscode.sh # npm packages, Chromium and code-server for the VS Code tests
else
  ./scripts/install_vscode.sh ||
    echo "test.sh: scripts/install_vscode.sh failed (above); the VS Code tests that need it will be skipped"
fi
./scripts/install_inspector.sh # Node 22 and the MCP Inspector CLI into .tools/ (fatal only under CI)
./scripts/install_emacs.sh # emacs-nox, elpa-eglot, elpa-markdown-mode from Debian (fatal only under CI)
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/pytest -q -rs -p no:cacheprovider "$@"
# The serial tests measure time: skipped on the xdist workers above, they run alone here.
if [[ $# == 0 ]]; then
  echo "== pytest, the serial tests alone"
  .venv/bin/pytest -q -rs -p no:cacheprovider -n 0 -m serial
else
  echo "test.sh: with arguments the serial tests were skipped; run: .venv/bin/pytest -n 0 -m serial"
fi
