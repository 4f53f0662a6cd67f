#!/usr/bin/env bash
# Install the MCP Inspector CLI that tests/mcp/test_inspector.py drives (idempotent; a second
# run skips what is there):
#   - Node 22 from npm (the package node@NODE_VERSION, which fetches the official binary as
#     another npm package) into .tools/node22: the Inspector needs Node >= 22.19, Debian 12 has
#     Node 20, and nothing is installed globally;
#   - @modelcontextprotocol/inspector@INSPECTOR_VERSION into .tools/inspector, installed with
#     that Node (the tests run it with that Node too).
# .tools/ gets a .gitignore of its own (*), so git ignores it. Only npm (any version) is needed.
#
# Under CI=true (or CI=1) the Inspector test is mandatory: failing to install is an error.
# Otherwise the script says why it skipped and exits 0, and the test is skipped with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TOOLS=$ROOT/.tools
NODE_VERSION=22.23.3
INSPECTOR_VERSION=2.12.0
NODE_DIR=$TOOLS/node22
INSPECTOR_DIR=$TOOLS/inspector
say() { echo "install_inspector: $*"; }
ci=${CI:-}
if [[ $ci == 1 || ${ci,,} == true ]]; then ci=true; else ci=false; fi

cannot() {
  if [[ $ci == true ]]; then
    echo "install_inspector: error: cannot install $1: $2 (CI=true: the Inspector test is mandatory)" >&2
    exit 1
  fi
  say "skipped $1: $2; tests/mcp/test_inspector.py will be skipped (under CI=true this is an error)"
  exit 0
}

# npm_in DIR PACKAGE: a private package.json in DIR, then npm install PACKAGE (exact version).
npm_in() {
  mkdir -p "$1"
  echo '{"name": "engram-tools", "private": true}' >"$1/package.json"
  (cd "$1" && npm_config_yes=true npm install --no-audit --no-fund --save-exact \
    --loglevel=error "$2")
}

command -v npm >/dev/null || cannot "Node $NODE_VERSION and the MCP Inspector" "npm is not installed"
mkdir -p "$TOOLS"
[[ -f $TOOLS/.gitignore ]] || echo '*' >"$TOOLS/.gitignore"

# -- Node 22 --------------------------------------------------------------------------------
node=$NODE_DIR/node_modules/.bin/node
marker=$NODE_DIR/.installed-$NODE_VERSION
if [[ -f $marker && -x $node ]]; then
  say "Node $NODE_VERSION: present"
else
  say "npm install node@$NODE_VERSION into .tools/node22"
  rm -rf "$NODE_DIR"
  if npm_in "$NODE_DIR" "node@$NODE_VERSION" && [[ $("$node" --version) == "v$NODE_VERSION" ]]; then
    touch "$marker"
  else
    cannot "Node $NODE_VERSION" "npm install node@$NODE_VERSION failed (see above)"
  fi
fi

# -- the Inspector, installed with that Node (npm is a Node script: PATH picks the Node) -------
inspector=$INSPECTOR_DIR/node_modules/.bin/mcp-inspector
marker=$INSPECTOR_DIR/.installed-$INSPECTOR_VERSION-node$NODE_VERSION
export PATH=$NODE_DIR/node_modules/.bin:$PATH
if [[ -f $marker && -x $inspector ]]; then
  say "@modelcontextprotocol/inspector $INSPECTOR_VERSION: present"
else
  say "npm install @modelcontextprotocol/inspector@$INSPECTOR_VERSION into .tools/inspector"
  rm -rf "$INSPECTOR_DIR"
  if npm_in "$INSPECTOR_DIR" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" &&
    [[ $("$inspector" --version 2>/dev/null) == *"$INSPECTOR_VERSION"* ]]; then
    touch "$marker"
  else
    cannot "@modelcontextprotocol/inspector $INSPECTOR_VERSION" "npm install failed (see above)"
  fi
fi
say "done"
