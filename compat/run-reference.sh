#!/bin/sh
# Run the native-dialect scenarios of the conformance kit against the reference
# implementation, pi 1.6.0 (`@earendil-works/pi-coding-agent@1.6.0` on node 22).
#
#   compat/run-reference.sh [pi-compat run options…]      e.g. --only 'prompt_*' --record /tmp/rec
#
# The reference is installed from npm into target/tools/reference unless it is
# already there (or PI_REFERENCE_DIR names a directory holding its node_modules).
# When it cannot be installed (no npm, no network) the run is skipped with a
# message and exit code 0. Scenarios tagged with a `deviation` are expected to
# fail (XFAIL); see compat/DEVIATIONS.md.
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

if ! installed; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "SKIP reference run: npm is not available to install $PKG@$VERSION"
        exit 0
    fi
    echo "installing $PKG@$VERSION and node 22 into $REF_DIR …"
    mkdir -p "$REF_DIR"
    if ! (cd "$REF_DIR" && npm install --no-audit --no-fund --loglevel=error "$PKG@$VERSION" "node@22" >install.log 2>&1); then
        echo "SKIP reference run: npm install failed (see $REF_DIR/install.log)"
        exit 0
    fi
    if ! installed; then
        echo "SKIP reference run: the installed reference is incomplete (see $REF_DIR/install.log)"
        exit 0
    fi
fi

cd "$ROOT"
if [ -z "${PI_COMPAT:-}" ]; then
    cargo build --quiet -p pi-compat --bin pi-compat
    PI_COMPAT="$ROOT/target/debug/pi-compat"
fi
echo "== reference pi $VERSION, native dialect =="
exec "$PI_COMPAT" run --agent "$NODE $CLI --mode rpc --offline" --dialect jsonl --profile reference "$@"
