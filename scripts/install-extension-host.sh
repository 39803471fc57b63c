#!/usr/bin/env bash
# Install the npm packages of pi-rpc's TypeScript extension host (the jiti
# loader, typebox, pi-tui, pi-agent-core, two small parsers and highlight.js,
# at the versions pinned in crates/extensions/src/extensions/host.rs) into
# DIR/node_modules ahead of time. pi-rpc installs them itself the first time a
# pi module needs them; this script is for machines that will be offline, and
# for the tests (target/tools/extension-host). By default DIR is where pi-rpc
# looks for them:
# $PI_RPC_EXTENSION_HOST_DIR, else $XDG_DATA_HOME/pi-rpc/extension-host
# (~/.local/share/pi-rpc/extension-host). Idempotent; needs npm (and the npm
# registry) only when something is missing.
#
#   scripts/install-extension-host.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${1:-${PI_RPC_EXTENSION_HOST_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/pi-rpc/extension-host}}"
# The pins (and the dependencies the host provides itself), read from the one
# place they are declared: name@version, one per word.
pins() {
  awk "/^pub const $1/{on=1} on{print} on&&/\\];/{exit}" "$root/crates/extensions/src/extensions/host.rs" |
    grep -o '("[a-z@/.-]*", "[0-9.]*")' | sed 's/("\([^"]*\)", "\([^"]*\)")/\1@\2/' | tr '\n' ' '
}
packages=$(pins HOST_PACKAGES)
provided=$(pins HOST_PROVIDED)
[ -n "$packages" ] || { echo "install-extension-host: cannot read HOST_PACKAGES from crates/extensions/src/extensions/host.rs" >&2; exit 1; }
missing=0
for spec in $packages; do
  name=${spec%@*}
  version=${spec##*@}
  manifest="$dir/node_modules/$name/package.json"
  if ! grep -q "\"version\": *\"$version\"" "$manifest" 2>/dev/null; then missing=1; fi
done
[ "$missing" = 1 ] || exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "install-extension-host: npm not found; cannot install $packages into $dir" >&2
  exit 1
fi
mkdir -p "$dir"
# As pi-rpc's installer does: each provided package is an empty local package
# that an npm `overrides` entry of DIR/package.json points at.
for spec in $provided; do
  name=${spec%@*}
  version=${spec##*@}
  mkdir -p "$dir/provided/$name"
  printf '{"name": "%s", "version": "%s", "private": true}\n' "$name" "$version" >"$dir/provided/$name/package.json"
  node -e '
    const fs = require("fs");
    const [file, name] = process.argv.slice(1);
    let manifest = {};
    try { manifest = JSON.parse(fs.readFileSync(file, "utf8")); } catch {}
    manifest.overrides = { ...manifest.overrides, [name]: `file:./provided/${name}` };
    fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + "\n");
  ' "$dir/package.json" "$name"
done
echo "install-extension-host: installing $packages into $dir" >&2
# shellcheck disable=SC2086
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact $packages >&2
