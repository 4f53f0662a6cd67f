#!/usr/bin/env bash
# Install Engram, index the bundled example vault and run a few searches on it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh
VAULT=${1:-examples/vault}
run() { printf '\n$'; printf ' %q' "$@"; printf '\n'; "$@"; }
run .venv/bin/engram index "$VAULT"
run .venv/bin/engram search "write-ahead log" --vault "$VAULT"
run .venv/bin/engram search --vault "$VAULT" --tag sqlite --from 2024-01-01 --to 2024-12-31
run .venv/bin/engram search "memory leak" --vault "$VAULT" --tag -python --limit 5
run .venv/bin/engram topics "$VAULT" --limit 10
run .venv/bin/engram status "$VAULT"
# Which topics the keyword map of .engram/config.yaml would add (a dry run: nothing is written;
# it exits 1 because one example note has malformed frontmatter and is reported, not edited).
run .venv/bin/engram librarian "$VAULT" || true
