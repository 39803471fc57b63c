#!/usr/bin/env bash
# The test command: unit, integration and end-to-end tests (with the real
# client examples), the HTML export in headless Chromium, the conformance
# kit in both dialects, the fuzz/crash/fault suites, and interop with the reference pi 1.6.0. Installs what the tests need into target/tools first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-tools.sh
scripts/install-mcp-servers.sh
scripts/install-serve-tools.sh
if [ -x target/tools/node/node_modules/.bin/node ]; then
  export PI_RPC_REQUIRE_TOOLS="${PI_RPC_REQUIRE_TOOLS:-1}"
fi
# No test reaches for the internet: pi's model catalog server (pi.dev), which
# RPC mode asks at start for each built-in provider with a key, goes to
# 127.0.0.1 where nothing listens (pi_compat::NO_CATALOG_SERVER, which the e2e
# harness and the reliability suites set for the programs they start).
export PI_RPC_ORIGIN_OVERRIDES="${PI_RPC_ORIGIN_OVERRIDES:-https://pi.dev=http://127.0.0.1:9}"

# A failing test's message, not a backtrace, ends its output (CI shows the end).
RUST_BACKTRACE="${PI_RPC_TEST_BACKTRACE:-0}" cargo test --workspace

# The fuzz, crash and fault suites against the real binary (bounded for CI;
# `cargo run -p pi-reliability -- long --seconds N` is the developer's long run).
cargo build --quiet -p pi-cli --bin pi
cargo build --quiet -p pi-reliability --bin pi-reliability
target/debug/pi-reliability ci

if [ -x tests/browser/export_html.sh ]; then
  tests/browser/export_html.sh
fi
if [ -x compat/run-kit.sh ]; then
  compat/run-kit.sh
fi
# Sessions and compaction against the reference pi 1.6.0 (installed from npm
# into target/tools/reference when missing; skipped without npm).
if [ -x tests/interop/sessions.sh ]; then
  tests/interop/sessions.sh --install
fi
