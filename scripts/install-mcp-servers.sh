#!/usr/bin/env bash
# Install the real MCP servers the MCP tests use into target/tools/mcp
# (idempotent; pinned): @modelcontextprotocol/server-everything (stdio and
# streamable HTTP), @modelcontextprotocol/server-filesystem, and the SDK the
# fault-test server (tests/mcp/fault-server.mjs) is written on. Needs npm;
# without it the MCP tests skip (unless PI_RPC_REQUIRE_TOOLS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${PI_MCP_SERVERS_DIR:-$root/target/tools/mcp}"
pins=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/sdk@1.32.2)
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${pins[*]}" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-mcp-servers: npm not found; MCP tests will be skipped" >&2
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private": true}' > package.json
echo "install-mcp-servers: installing ${pins[*]} into $dir" >&2
npm install --no-audit --no-fund --loglevel=error "${pins[@]}" >&2
echo "${pins[*]}" > "$stamp"
