#!/usr/bin/env bash
# Install what the Emacs end-to-end test (tests/editors/test_emacs.py) needs, from Debian
# (idempotent; only what is missing is installed):
#   - emacs-nox (Emacs 28 on Debian 12), elpa-eglot (eglot 1.9), elpa-markdown-mode.
# Installing Debian packages needs root and apt-get.
#
# Under CI=true (or CI=1) the Emacs test is mandatory: a package that cannot be installed fails
# the script. Otherwise the script says what it skipped and why and exits 0; the test is then
# skipped with a reason (tests/editors/needs.py).
# ENGRAM_TEST_NOT_ROOT=1 makes the script act as if it did not run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(emacs-nox elpa-eglot elpa-markdown-mode)
say() { echo "install_emacs: $*"; }
ci=${CI:-}
if [[ $ci == 1 || ${ci,,} == true ]]; then ci=true; else ci=false; fi

cannot() {
  if [[ $ci == true ]]; then
    echo "install_emacs: error: cannot install $1: $2 (CI=true: the Emacs test is mandatory)" >&2
    exit 1
  fi
  say "skipped $1: $2; tests/editors/test_emacs.py will be skipped (under CI=true this is an error)"
  exit 0
}

missing=()
for package in "${PACKAGES[@]}"; do
  # dpkg -s succeeds for a removed package whose config files remain: ask for its status.
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  say "${PACKAGES[*]}: present"
  exit 0
fi
if [[ ${ENGRAM_TEST_NOT_ROOT:-} == 1 || $(id -u) != 0 ]]; then
  cannot "${missing[*]}" "installing Debian packages needs root"
fi
command -v apt-get >/dev/null || cannot "${missing[*]}" "apt-get is not available (not Debian?)"
say "apt-get install ${missing[*]}"
wait_lock=(-o DPkg::Lock::Timeout=300) # another apt-get may be running: wait for it
if ! { apt-get "${wait_lock[@]}" update -qq &&
  DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null; }; then
  cannot "${missing[*]}" "apt-get install failed (see above)"
fi
command -v emacs >/dev/null || cannot "emacs-nox" "no emacs on PATH after apt-get install"
say "done"
