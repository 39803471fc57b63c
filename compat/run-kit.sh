#!/bin/sh
# Build pi-rpc and the conformance kit, run the kit against pi-rpc in its three
# dialects (native JSONL, JSON-RPC 2.0 and ACP), then against the reference pi 1.6.0
# when it can be installed. Prints one line per scenario and a summary per run.
#
#   compat/run-kit.sh                 # debug build (what `cargo test` already built)
#   KIT_RELEASE=1 compat/run-kit.sh   # release build of pi and pi-compat
#   KIT_REFERENCE=0 …                 # skip the reference run
#   KIT_STRICT_REFERENCE=1 …          # fail when the reference run has unexpected failures
#
# Exit status: non-zero when pi-rpc fails a scenario that is not listed in
# compat/known-gaps/pi-rpc-<dialect>.txt (listed ones are reported as XFAIL).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ "${KIT_RELEASE:-0}" = 1 ]; then PROFILE_FLAG=--release; DIR=release; else PROFILE_FLAG=; DIR=debug; fi
cargo build --quiet $PROFILE_FLAG -p pi-cli --bin pi -p pi-compat --bin pi-compat || exit 2
PI="$ROOT/target/$DIR/pi"
KIT="$ROOT/target/$DIR/pi-compat"
JOBS=${KIT_JOBS:-2}
status=0

# pi's TypeScript extensions (pi's shipped examples among them) run in the
# extension host: node 22 and the host's packages from target/tools
# (scripts/install-test-tools.sh), pi's examples from the reference package.
TOOLS="$ROOT/target/tools"
HOST_ENV="PI_RPC_EXTENSION_HOST_DIR=$TOOLS/extension-host"
[ -x "$TOOLS/node/node_modules/.bin/node" ] && HOST_ENV="$HOST_ENV PI_RPC_NODE=$TOOLS/node/node_modules/.bin/node"
EXAMPLES="$TOOLS/reference/node_modules/@earendil-works/pi-coding-agent/examples"

# Without pi's examples the scenarios that copy them are reported SKIPPED.
EXAMPLES_ARG=
[ -d "$EXAMPLES" ] && EXAMPLES_ARG="--examples $EXAMPLES"

for dialect in jsonl jsonrpc acp; do
    echo "== pi-rpc, $dialect dialect =="
    expected="$ROOT/compat/known-gaps/pi-rpc-$dialect.txt"
    if [ ! -d "$EXAMPLES" ] || [ ! -d "$TOOLS/extension-host/node_modules/jiti" ]; then
        if [ "${PI_RPC_REQUIRE_TOOLS:-0}" = 1 ]; then
            echo "the extension host or pi's examples are missing (scripts/install-test-tools.sh)"; exit 2
        fi
    fi
    if [ ! -d "$TOOLS/extension-host/node_modules/jiti" ]; then
        echo "NOTE: the extension host is missing: the scenarios of TypeScript extensions are expected to fail"
        expected=$(mktemp)
        cat "$ROOT/compat/known-gaps/pi-rpc-$dialect.txt" > "$expected"
        for f in "$ROOT"/compat/scenarios/$dialect/example_*.json "$ROOT"/compat/scenarios/$dialect/extension_*.json; do
            [ -e "$f" ] || continue
            echo "$(basename "$f" .json)  # needs the TypeScript extension host" >> "$expected"
        done
    fi
    # shellcheck disable=SC2086
    "$KIT" run --agent "env $HOST_ENV $PI --mode rpc --protocol $dialect" --dialect "$dialect" --jobs "$JOBS" \
        $EXAMPLES_ARG --expect-fail "$expected" || status=1
done

if [ "${KIT_REFERENCE:-1}" = 1 ]; then
    PI_COMPAT="$KIT" sh "$ROOT/compat/run-reference.sh" --jobs "$JOBS"
    ref=$?
    if [ "$ref" != 0 ] && [ "${KIT_STRICT_REFERENCE:-0}" = 1 ]; then status=1; fi
fi
exit $status
