#!/usr/bin/env bash
# Install what the VS Code extension's tests need (idempotent; a second run skips what is there):
#   - the extension's npm dev dependencies (npm ci in editors/vscode, from package-lock.json),
#   - Debian's chromium (headless browser for the end-to-end test), libkrb5-dev and a C++
#     toolchain (code-server builds native modules on install),
#   - code-server (VS Code in a browser) into editors/vscode/.e2e/code-server (gitignored).
# Run as root on Debian 12 (apt-get is used only for packages that are missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
EXT=$ROOT/editors/vscode
CODE_SERVER_VERSION=4.100.3
PREFIX=$EXT/.e2e/code-server
say() { echo "install_vscode: $*"; }

command -v node >/dev/null && command -v npm >/dev/null || {
  echo "install_vscode: node and npm (Node 20) are required" >&2
  exit 1
}

# -- Debian packages ------------------------------------------------------------------------
missing=()
command -v chromium >/dev/null || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
{ command -v g++ >/dev/null && command -v make >/dev/null; } || missing+=(build-essential)
command -v python3 >/dev/null || missing+=(python3)
if ((${#missing[@]})); then
  say "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  say "chromium, libkrb5-dev, build tools: present"
fi

# -- the extension's npm dependencies -------------------------------------------------------
stamp=$EXT/node_modules/.engram-lock
lock_sum=$(sha256sum "$EXT/package-lock.json" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$lock_sum" ]]; then
  say "editors/vscode/node_modules: up to date"
else
  say "npm ci in editors/vscode"
  (cd "$EXT" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$lock_sum" >"$stamp"
fi

# -- code-server ----------------------------------------------------------------------------
marker=$PREFIX/.installed-$CODE_SERVER_VERSION
if [[ -f $marker && -x $PREFIX/node_modules/.bin/code-server ]]; then
  say "code-server $CODE_SERVER_VERSION: present"
else
  # code-server's install step downloads a ripgrep tarball; seed its cache with a local rg.
  cache=${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11
  tarball=$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
  if [[ ! -s $tarball ]]; then
    rg_bin=""
    for candidate in "$ROOT/.venv/bin/rg" "$(command -v rg || true)"; do
      if [[ -n $candidate && -x $candidate ]]; then
        rg_bin=$candidate
        break
      fi
    done
    if [[ -z $rg_bin ]]; then
      say "apt-get install ripgrep (for code-server's ripgrep cache)"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep >/dev/null
      rg_bin=$(command -v rg)
    fi
    tmp=$(mktemp -d)
    cp "$rg_bin" "$tmp/rg"
    mkdir -p "$cache"
    tar -czf "$tarball" -C "$tmp" rg
    rm -rf "$tmp"
  fi
  say "npm install code-server@$CODE_SERVER_VERSION into editors/vscode/.e2e (a few minutes)"
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  echo '{"name": "engram-e2e-code-server", "private": true}' >"$PREFIX/package.json"
  (cd "$PREFIX" && npm_config_unsafe_perm=true npm_config_yes=true npm install --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION")
  "$PREFIX/node_modules/.bin/code-server" --version >/dev/null
  touch "$marker"
fi
say "done (code-server: editors/vscode/.e2e/code-server/node_modules/.bin/code-server)"
