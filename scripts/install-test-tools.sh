#!/usr/bin/env bash
# Install what the client tests need into target/tools/node (idempotent):
# node 22 (for the seed's TypeScript client example) and vscode-jsonrpc.
# Needs the npm registry; prints a notice and exits 0 if npm is unavailable
# (the tests that need these tools then skip, unless PI_RPC_REQUIRE_TOOLS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${PI_TEST_TOOLS_DIR:-$root/target/tools/node}"
if [ -x "$dir/node_modules/.bin/node" ] && [ -f "$dir/node_modules/vscode-jsonrpc/package.json" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-test-tools: npm not found; client tests needing node 22 will be skipped" >&2
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private": true}' > package.json
echo "install-test-tools: installing node@22 and vscode-jsonrpc into $dir" >&2
npm install --no-audit --no-fund --loglevel=error node@22 vscode-jsonrpc@10.0.0 >&2
"$dir/node_modules/.bin/node" --version >&2
