#!/usr/bin/env bash
# Interop with the reference pi 1.6.0, run against the fake model server:
#  * sessions.py: a session written by pi-rpc opens in pi (`--session`,
#    `get_messages`) and one written by pi opens in pi-rpc, messages equal
#    (pi 1.6 `role:"system"` messages aside: pi-rpc does not expose them);
#  * compaction_events.py: the same compaction scenarios give the same event
#    sequences and the same summarisation requests in both.
#
# The reference is looked up in $PI_REFERENCE_DIR, else target/tools/reference:
# a directory where `npm install node@22 @earendil-works/pi-coding-agent@1.6.0`
# was run. With --install the script runs that install itself (npm needed).
# Without the reference (or python3) it prints "SKIP: ..." and exits 0.
#
# Usage: tests/interop/sessions.sh [--install]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REF="${PI_REFERENCE_DIR:-$ROOT/target/tools/reference}"

if [[ "${1:-}" == "--install" && ! -d "$REF/node_modules/@earendil-works/pi-coding-agent" ]]; then
  if command -v npm >/dev/null; then
    echo "== installing node 22 and pi 1.6.0 into $REF"
    mkdir -p "$REF"
    (cd "$REF" && npm install --silent --no-audit --no-fund node@22 @earendil-works/pi-coding-agent@1.6.0)
  else
    echo "npm not found: cannot install the reference" >&2
  fi
fi

PKG="$REF/node_modules/@earendil-works/pi-coding-agent"
NODE="$REF/node_modules/.bin/node"
[[ -x "$NODE" ]] || NODE="$ROOT/target/tools/node/node_modules/.bin/node"
[[ -x "$NODE" ]] || NODE="$(command -v node || true)"
if [[ ! -f "$PKG/dist/cli.js" ]]; then
  echo "SKIP: the reference pi 1.6.0 is not installed in $REF (set PI_REFERENCE_DIR, or run with --install)"
  exit 0
fi
if [[ -z "$NODE" ]] || [[ "$("$NODE" --version)" != v22.* ]]; then
  echo "SKIP: node 22 not found (looked in $REF/node_modules/.bin, target/tools/node and PATH)"
  exit 0
fi
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 not found"
  exit 0
fi

echo "== building pi and the fake model server"
(cd "$ROOT" && cargo build -q -p pi-cli --bin pi && cargo build -q -p pi-compat --bin fake-model-server)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/debug"

status=0
echo "== sessions written by one, read by the other"
python3 "$ROOT/tests/interop/sessions.py" "$TARGET/pi" "$TARGET/fake-model-server" "$PKG" "$NODE" || status=1
echo "== compaction events and summarisation requests"
python3 "$ROOT/tests/interop/compaction_events.py" "$TARGET/pi" "$TARGET/fake-model-server" "$PKG" "$NODE" || status=1
[[ "$status" == 0 ]] && echo "interop: all checks passed"
exit "$status"
