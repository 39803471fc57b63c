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

if ! sh "$ROOT/scripts/install-reference.sh"; then
    echo "SKIP reference run: the reference $PKG@$VERSION is not installed"
    exit 0
fi

cd "$ROOT"
if [ -z "${PI_COMPAT:-}" ]; then
    cargo build --quiet -p pi-compat --bin pi-compat
    PI_COMPAT="$ROOT/target/debug/pi-compat"
fi
echo "== reference pi $VERSION, native dialect =="
exec "$PI_COMPAT" run --agent "$NODE $CLI --mode rpc --offline" --dialect jsonl --profile reference \
    --examples "$REF_DIR/node_modules/$PKG/examples" "$@"
