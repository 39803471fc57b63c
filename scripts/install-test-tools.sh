#!/usr/bin/env bash
# Install what the tests need into target/tools (idempotent):
#  - target/tools/node: node 22 (for the seed's TypeScript client example and
#    the extension host) and vscode-jsonrpc;
#  - target/tools/extension-host: the TypeScript extension host's packages
#    (jiti, typebox; scripts/install-extension-host.sh);
#  - target/tools/reference: the reference pi 1.6.0, whose example extensions
#    the conformance kit runs (scripts/install-reference.sh).
# Needs the npm registry; prints a notice and exits 0 if npm is unavailable
# (the tests that need these tools then skip, unless PI_RPC_REQUIRE_TOOLS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${PI_TEST_TOOLS_DIR:-$root/target/tools/node}"
if ! command -v npm >/dev/null 2>&1; then
  echo "install-test-tools: npm not found; tests needing node 22, the extension host or the reference will be skipped" >&2
  exit 0
fi
if ! [ -x "$dir/node_modules/.bin/node" ] || ! [ -f "$dir/node_modules/vscode-jsonrpc/package.json" ]; then
  mkdir -p "$dir"
  cd "$dir"
  [ -f package.json ] || echo '{"private": true}' > package.json
  echo "install-test-tools: installing node@22 and vscode-jsonrpc into $dir" >&2
  npm install --no-audit --no-fund --loglevel=error node@22 vscode-jsonrpc@10.0.0 >&2
  "$dir/node_modules/.bin/node" --version >&2
fi
"$root/scripts/install-extension-host.sh" "$root/target/tools/extension-host" ||
  echo "install-test-tools: the extension host's packages could not be installed" >&2
sh "$root/scripts/install-reference.sh" || echo "install-test-tools: the reference pi could not be installed" >&2
