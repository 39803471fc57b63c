#!/usr/bin/env bash
# Every example extension pi 1.6.0 ships, run by pi-rpc and by pi 1.6.0 side
# by side (tests/e2e/examples_side_by_side.rs). scripts/test.sh runs a fixed
# sample of them; this runs them all, or the ones named: `scripts/examples-side-by-side.sh plan-mode,ssh.ts`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PI_EXAMPLES="${1:-all}"
# `-p pi-cli`: from the workspace root a bare `cargo test` unifies the features of
# every member and rebuilds the workspace's crates before the test runs.
exec cargo test -p pi-cli --test e2e each_example_extension_behaves_as_in_pi -- --nocapture
