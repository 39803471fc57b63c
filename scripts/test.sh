#!/usr/bin/env bash
# The test command: unit, integration and end-to-end tests (with the real
# client examples), the HTML export in headless Chromium, and the conformance
# kit in both dialects. Installs what the tests need into target/tools first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-tools.sh
if [ -x target/tools/node/node_modules/.bin/node ]; then
  export PI_RPC_REQUIRE_TOOLS="${PI_RPC_REQUIRE_TOOLS:-1}"
fi

cargo test --workspace

if [ -x tests/browser/export_html.sh ]; then
  tests/browser/export_html.sh
fi
if [ -x compat/run-kit.sh ]; then
  compat/run-kit.sh
fi
