#!/bin/sh
# Install the reference implementation, pi 1.6.0
# (`@earendil-works/pi-coding-agent@1.6.0`) with node 22, into
# target/tools/reference (or $PI_REFERENCE_DIR) unless it is already there.
# The tests compare pi-rpc with it and read pi's example extensions from it.
# Exit status 0 when it is installed; 1 (with a message) when it cannot be.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REF_DIR=${PI_REFERENCE_DIR:-$ROOT/target/tools/reference}
PKG=@earendil-works/pi-coding-agent
VERSION=1.6.0
CLI="$REF_DIR/node_modules/$PKG/dist/cli.js"
NODE="$REF_DIR/node_modules/.bin/node"

installed() {
    [ -f "$CLI" ] && [ -x "$NODE" ] && "$NODE" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' 2>/dev/null
}

installed && exit 0
if ! command -v npm >/dev/null 2>&1; then
    echo "install-reference: npm is not available to install $PKG@$VERSION" >&2
    exit 1
fi
echo "install-reference: installing $PKG@$VERSION and node 22 into $REF_DIR …" >&2
mkdir -p "$REF_DIR"
if ! (cd "$REF_DIR" && npm install --no-audit --no-fund --loglevel=error "$PKG@$VERSION" "node@22.23.3" >install.log 2>&1); then
    echo "install-reference: npm install failed (see $REF_DIR/install.log)" >&2
    exit 1
fi
if ! installed; then
    echo "install-reference: the installed reference is incomplete (see $REF_DIR/install.log)" >&2
    exit 1
fi
