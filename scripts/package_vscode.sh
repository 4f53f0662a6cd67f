#!/usr/bin/env bash
# Build the VS Code extension's .vsix for one platform, with Engram inside: installing it is
# enough on a machine with Python 3.11 or newer (docs/editors.md).
#
#   scripts/package_vscode.sh [--target TARGET] [--out FILE]
#
# TARGET is a VS Code platform target (linux-x64, linux-arm64, alpine-x64, darwin-x64,
# darwin-arm64, win32-x64); the default is this machine's. The .vsix is written to
# editors/vscode/dist/engram-TARGET.vsix unless --out names another file.
#
# What goes in editors/vscode/bundled/libs/ (rebuilt on every run):
#   - Engram, built as a wheel from this checkout, and its runtime dependencies, downloaded as
#     binary wheels for TARGET (pip --platform ... --only-binary=:all:) for each Python of
#     PYTHONS below;
#   - common/: the wheels that are the same for every one of those Pythons (pure Python, or
#     abi3 like watchfiles and cryptography), plus bin/rg from the ripgrep wheel;
#   - cp311/, cp312/, ...: the wheels built for one Python only (pydantic-core, PyYAML,
#     rpds-py, cffi);
#   - bundle.json: the target, the Pythons and Engram's version, read by the extension, which
#     runs `<python> -m engram_ls.lsp` with PYTHONPATH=cpXY:common.
# The semantic extra (wordllama, numpy, ...) is not bundled.
#
# Needs Node 20 with editors/vscode/node_modules (scripts/install_vscode.sh, or npm ci) and a
# Python 3.11+ with pip: $PYTHON, else .venv/bin/python, else python3. pip reaches the package
# index for the dependencies (its cache serves them again).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
EXT=$ROOT/editors/vscode
LIBS=$EXT/bundled/libs
PYTHONS=(3.11 3.12 3.13 3.14)
say() { echo "package_vscode: $*"; }
die() {
  echo "package_vscode: error: $*" >&2
  exit 1
}

target=""
out=""
while (($#)); do
  case $1 in
    --target) target=${2:?--target needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

if [[ -z $target ]]; then
  target=$(node -p 'process.platform + "-" + process.arch')
  if [[ $target == linux-* ]] && ldd --version 2>&1 | grep -qi musl; then
    target=alpine-${target#linux-}
  fi
fi
# The wheels' platform tags for each target (pip takes the best one a wheel has). Linux: glibc
# 2.28 at most, as VS Code itself needs; macOS 11 and older releases.
case $target in
  linux-x64) platforms=(manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64) ;;
  linux-arm64) platforms=(manylinux_2_28_aarch64 manylinux_2_17_aarch64 manylinux2014_aarch64) ;;
  alpine-x64) platforms=(musllinux_1_2_x86_64 musllinux_1_1_x86_64) ;;
  darwin-x64) platforms=(macosx_11_0_x86_64) ;;
  darwin-arm64) platforms=(macosx_11_0_arm64) ;;
  win32-x64) platforms=(win_amd64) ;;
  *) die "no wheels for target $target; one of: linux-x64, linux-arm64, alpine-x64, darwin-x64, darwin-arm64, win32-x64" ;;
esac
out=${out:-$EXT/dist/engram-$target.vsix}
[[ $out == /* ]] || out=$PWD/$out

py=${PYTHON:-}
if [[ -z $py && -x $ROOT/.venv/bin/python ]]; then
  py=$ROOT/.venv/bin/python
fi
py=${py:-python3}
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
  die "$py is not a Python 3.11 or newer (set PYTHON, or run scripts/install.sh)"
[[ -x $EXT/node_modules/.bin/vsce ]] || die "editors/vscode/node_modules is missing (run scripts/install_vscode.sh, or npm ci there)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip() { "$py" -m pip --disable-pip-version-check "$@"; }
pipflags=(--quiet --only-binary=:all: --implementation cp)
for p in "${platforms[@]}"; do
  pipflags+=(--platform "$p")
done

say "building Engram's wheel from this checkout"
# pure Python (setup.py leaves the optional compiled loops out): one wheel for every Python
ENGRAM_PURE_PYTHON=1 pip wheel --quiet --no-deps --wheel-dir "$work/engram" "$ROOT" >/dev/null
wheels=("$work"/engram/engram_ls-*.whl)
engram_wheel=${wheels[0]}
version=$(basename "$engram_wheel" | cut -d- -f2)

for v in "${PYTHONS[@]}"; do
  say "wheels of Engram's dependencies for $target, Python $v"
  pip download "${pipflags[@]}" --python-version "$v" --dest "$work/dl/$v" "$engram_wheel" >/dev/null
done

# A wheel downloaded for every Python goes to common/; the others to their Python's folder.
rm -rf "$EXT/bundled"
mkdir -p "$LIBS"
in_all() {
  local v
  for v in "${PYTHONS[@]}"; do
    [[ -f $work/dl/$v/$1 ]] || return 1
  done
}
common=()
for f in "$work/dl/${PYTHONS[0]}"/*.whl; do
  if in_all "$(basename "$f")"; then
    common+=("$f")
  fi
done
say "installing ${#common[@]} wheels into bundled/libs/common"
pip install "${pipflags[@]}" --python-version "${PYTHONS[0]}" --no-deps --no-compile \
  --target "$LIBS/common" "${common[@]}"
pythons_json=""
for v in "${PYTHONS[@]}"; do
  own=()
  for f in "$work/dl/$v"/*.whl; do
    in_all "$(basename "$f")" || own+=("$f")
  done
  dir=$LIBS/cp${v/./}
  mkdir -p "$dir"
  if ((${#own[@]})); then
    say "installing ${#own[@]} wheels for Python $v into bundled/libs/cp${v/./}"
    pip install "${pipflags[@]}" --python-version "$v" --no-deps --no-compile --target "$dir" "${own[@]}"
  fi
  rm -rf "$dir/bin"  # these wheels have no programs the server needs
  pythons_json+="${pythons_json:+, }\"$v\""
done

# bin/: only rg (the ripgrep wheel's program, which the server runs); the other scripts pip
# wrote start with this machine's Python.
shopt -s nullglob
for f in "$LIBS/common/bin"/*; do
  case $(basename "$f") in
    rg | rg.exe) ;;
    *) rm -rf "$f" ;;
  esac
done
shopt -u nullglob
rg_name=rg
[[ $target == win32-* ]] && rg_name=rg.exe
[[ -f $LIBS/common/bin/$rg_name ]] || die "the ripgrep wheel brought no bin/$rg_name"
chmod 755 "$LIBS/common/bin/$rg_name"
cat >"$LIBS/bundle.json" <<EOF
{
  "target": "$target",
  "engram": "$version",
  "pythons": [$pythons_json],
  "common": "common",
  "bin": "common/bin"
}
EOF
say "bundled/libs: $(du -sh "$LIBS" | cut -f1)"

cd "$EXT"
npm run --silent typecheck
mkdir -p "$(dirname "$out")"
say "vsce package --target $target"
node_modules/.bin/vsce package --target "$target" --no-dependencies --allow-missing-repository \
  --out "$out" >/dev/null
say "wrote $out ($(du -h "$out" | cut -f1))"
