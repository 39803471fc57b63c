#!/usr/bin/env bash
# Install what the client tests need into target/tools/ (idempotent, pinned
# versions, npm registry only), each in its own directory:
#   node/       node 22 (the seed's TypeScript client example) and vscode-jsonrpc;
#   acp/        pi-acp (the ACP bridge editors use), acpx (a headless ACP client)
#               and the ACP TypeScript SDK (the editor-like client of the ACP tests);
#   reference/  the reference pi 1.6.0 (its RpcClient, its example extensions,
#               the kit and interop checks);
#   extension-host/  the TypeScript extension host's packages (jiti, typebox;
#               scripts/install-extension-host.sh reads the pins from the source).
# Prints a notice and exits 0 if npm is unavailable (the tests that need
# these tools then skip, unless PI_RPC_REQUIRE_TOOLS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/target/tools"
node_dir="${PI_TEST_TOOLS_DIR:-$tools/node}"

# has DIR PACKAGE VERSION: the package is installed in DIR at that version.
has() {
  local manifest="$1/node_modules/$2/package.json"
  [ -f "$manifest" ] && grep -q "\"version\": *\"$3\"" "$manifest"
}

# install DIR PACKAGE@VERSION...: npm install into DIR unless all are there.
install() {
  local dir="$1" missing=0 spec name version
  shift
  for spec in "$@"; do
    name="${spec%@*}"
    version="${spec##*@}"
    has "$dir" "$name" "$version" || missing=1
  done
  [ "$missing" = 0 ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    echo "install-test-tools: npm not found; tests needing $* will be skipped" >&2
    return 0
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  echo "install-test-tools: installing $* into $dir" >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$@" >&2)
}

install "$node_dir" node@22.23.3 vscode-jsonrpc@10.0.0
install "$tools/acp" pi-acp@0.0.34 acpx@0.19.1 @agentclientprotocol/sdk@1.9.0
install "$tools/reference" node@22.23.3 @earendil-works/pi-coding-agent@1.6.0
"$root/scripts/install-extension-host.sh" "$tools/extension-host" ||
  echo "install-test-tools: the extension host's packages could not be installed" >&2
