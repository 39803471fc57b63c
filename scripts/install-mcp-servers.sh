#!/usr/bin/env bash
# Install the real MCP servers the MCP tests use (idempotent; pinned):
#   target/tools/mcp/         from npm: @modelcontextprotocol/server-everything
#                             (stdio and streamable HTTP), server-filesystem,
#                             server-memory (stdio), and the TypeScript SDK the
#                             fault-test server (tests/mcp/fault-server.mjs) is
#                             written on;
#   target/tools/mcp-python/  from PyPI: the official Python SDK (`mcp`), which
#                             tests/mcp/python_server.py serves over streamable
#                             HTTP (pip --target, nothing installed system-wide).
# Needs npm (and python3 with pip for the Python part); without them the tests
# needing these servers skip (unless PI_RPC_REQUIRE_TOOLS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${PI_MCP_SERVERS_DIR:-$root/target/tools/mcp}"
py_dir="${PI_MCP_PYTHON_DIR:-$root/target/tools/mcp-python}"
pins=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31
  @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/sdk@1.32.2)
py_pin="mcp==2.3.0"

stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${pins[*]}" ]; then
  :
elif ! command -v npm >/dev/null 2>&1; then
  echo "install-mcp-servers: npm not found; MCP tests will be skipped" >&2
else
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  echo "install-mcp-servers: installing ${pins[*]} into $dir" >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "${pins[@]}" >&2)
  echo "${pins[*]}" > "$stamp"
fi

py_stamp="$py_dir/.installed"
if [ -f "$py_stamp" ] && [ "$(cat "$py_stamp")" = "$py_pin" ]; then
  :
elif command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
  echo "install-mcp-servers: installing $py_pin into $py_dir" >&2
  rm -rf "$py_dir"
  mkdir -p "$py_dir"
  python3 -m pip install --quiet --disable-pip-version-check --no-input --target "$py_dir" "$py_pin" >&2
  echo "$py_pin" > "$py_stamp"
else
  echo "install-mcp-servers: python3 -m pip not found; the Python MCP server tests will be skipped" >&2
fi
