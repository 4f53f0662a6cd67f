#!/usr/bin/env bash
# Install what the VS Code extension's tests need (idempotent; a second run skips what is there):
#   - the extension's npm dev dependencies (npm ci in editors/vscode, from package-lock.json),
#   - Debian's chromium (headless browser for the end-to-end test), libkrb5-dev and a C++
#     toolchain (code-server builds native modules on install),
#   - code-server (VS Code in a browser) into editors/vscode/.e2e/code-server (gitignored).
# Missing Debian packages need root and apt-get (Debian 12; used only for what is missing).
#
# Under CI=true (or CI=1) every piece is mandatory: one that cannot be installed fails the
# script. Otherwise (a contributor's machine) a piece that cannot be installed is skipped with
# the reason printed, the rest is still installed, and the script exits 0; the tests that need
# a skipped piece are then skipped with a reason (tests/editors/needs.py).
# ENGRAM_TEST_NOT_ROOT=1 makes the script act as if it did not run as root (for its own test).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
EXT=$ROOT/editors/vscode
CODE_SERVER_VERSION=4.100.3
PREFIX=$EXT/.e2e/code-server
say() { echo "install_vscode: $*"; }
ci=${CI:-}
if [[ $ci == 1 || ${ci,,} == true ]]; then ci=true; else ci=false; fi

# cannot WHAT WHY: under CI an error (exit 1); otherwise WHAT is skipped and the script goes on.
cannot() {
  if [[ $ci == true ]]; then
    echo "install_vscode: error: cannot install $1: $2 (CI=true: the editor tests are mandatory)" >&2
    exit 1
  fi
  say "skipped $1: $2; the tests that need it will be skipped (under CI=true this is an error)"
}
can_apt() {
  [[ ${ENGRAM_TEST_NOT_ROOT:-} != 1 && $(id -u) == 0 ]] && command -v apt-get >/dev/null
}
apt_install() {
  say "apt-get install $*"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! { command -v node >/dev/null && command -v npm >/dev/null; }; then
  cannot "the extension's npm packages and code-server" "node and npm (Node 20) are not installed"
  exit 0
fi

# -- Debian packages ------------------------------------------------------------------------
missing=()
command -v chromium >/dev/null || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
{ command -v g++ >/dev/null && command -v make >/dev/null; } || missing+=(build-essential)
command -v python3 >/dev/null || missing+=(python3)
build_missing=()  # what code-server's install needs (all but chromium)
for m in ${missing[@]+"${missing[@]}"}; do
  [[ $m == chromium ]] || build_missing+=("$m")
done
if ((${#missing[@]} == 0)); then
  say "chromium, libkrb5-dev, build tools: present"
elif can_apt; then
  apt_install "${missing[@]}"
  build_missing=()
else
  cannot "${missing[*]}" "installing Debian packages needs root and apt-get"
fi

# -- the extension's npm dependencies -------------------------------------------------------
stamp=$EXT/node_modules/.engram-lock
lock_sum=$(sha256sum "$EXT/package-lock.json" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$lock_sum" ]]; then
  say "editors/vscode/node_modules: up to date"
else
  say "npm ci in editors/vscode"
  if ! (cd "$EXT" && npm ci --no-audit --no-fund --loglevel=error); then
    cannot "editors/vscode/node_modules" "npm ci failed (see above)"
    exit 0
  fi
  echo "$lock_sum" >"$stamp"
fi

# -- code-server ----------------------------------------------------------------------------
marker=$PREFIX/.installed-$CODE_SERVER_VERSION
if [[ -f $marker && -x $PREFIX/node_modules/.bin/code-server ]]; then
  say "code-server $CODE_SERVER_VERSION: present"
elif ((${#build_missing[@]})); then
  cannot "code-server $CODE_SERVER_VERSION" "its install builds native modules and needs ${build_missing[*]}"
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
    if [[ -z $rg_bin ]] && can_apt; then
      apt_install ripgrep  # for code-server's ripgrep cache
      rg_bin=$(command -v rg)
    fi
    if [[ -n $rg_bin ]]; then
      tmp=$(mktemp -d)
      cp "$rg_bin" "$tmp/rg"
      mkdir -p "$cache"
      tar -czf "$tarball" -C "$tmp" rg
      rm -rf "$tmp"
    fi
  fi
  if [[ ! -s $tarball ]]; then
    cannot "code-server $CODE_SERVER_VERSION" "no rg to seed its ripgrep cache (run scripts/install.sh first)"
  else
    # node-gyp cannot build code-server's native modules under a path with a space (argon2's
    # include path is split at it): then build under a folder without one and link it here.
    dest=$PREFIX
    if [[ $PREFIX == *[[:space:]]* ]]; then
      key=$(printf '%s' "$PREFIX" | sha256sum | cut -c1-12)
      dest=${XDG_CACHE_HOME:-$HOME/.cache}/engram/code-server-$CODE_SERVER_VERSION-$key
    fi
    say "npm install code-server@$CODE_SERVER_VERSION into $dest (a few minutes)"
    rm -rf "$PREFIX" "$dest"
    mkdir -p "$dest"
    if [[ $dest != "$PREFIX" ]]; then
      mkdir -p "$(dirname "$PREFIX")"
      ln -s "$dest" "$PREFIX"
    fi
    echo '{"name": "engram-e2e-code-server", "private": true}' >"$PREFIX/package.json"
    if (cd "$dest" && npm_config_unsafe_perm=true npm_config_yes=true npm install --no-audit --no-fund \
      --loglevel=error "code-server@$CODE_SERVER_VERSION") &&
      "$PREFIX/node_modules/.bin/code-server" --version >/dev/null; then
      touch "$marker"
    else
      cannot "code-server $CODE_SERVER_VERSION" "npm install failed (see above)"
    fi
  fi
fi
say "done"
