#!/usr/bin/env bash
# Headless-browser check of the HTML export: builds the sample page with the
# `export_html::tests::writes_fixture` unit test, opens it in Debian's
# Chromium (installed if missing), saves a screenshot and checks that the
# rendered page text holds the conversation.
#
# Usage: tests/browser/export_html.sh [OUT_DIR]   (default: target/browser)
# Exit codes: 0 passed, 1 failed, 0 with "SKIP:" when Chromium is unavailable.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT_DIR="${1:-$ROOT/target/browser}"
mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
FIXTURE="$OUT_DIR/export-fixture.html"
PNG="$OUT_DIR/export-fixture.png"
DOM="$OUT_DIR/export-fixture.dom.html"

find_chromium() {
  command -v chromium || command -v chromium-browser || command -v google-chrome || true
}

CHROMIUM="$(find_chromium)"
if [[ -z "$CHROMIUM" ]]; then
  echo "chromium not found; installing Debian's chromium package" >&2
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || true
  fi
  CHROMIUM="$(find_chromium)"
fi
if [[ -z "$CHROMIUM" ]]; then
  echo "SKIP: chromium is not installed and could not be installed (need root and apt-get)"
  exit 0
fi

echo "== building the sample export"
(cd "$ROOT" && EXPORT_FIXTURE="$FIXTURE" cargo test -q -p pi-session --lib export_html::tests::writes_fixture -- --exact >/dev/null)
[[ -s "$FIXTURE" ]] || { echo "FAIL: $FIXTURE was not written"; exit 1; }

PROFILE="$(mktemp -d)"
trap 'rm -rf "$PROFILE"' EXIT
chrome() {
  # No network is needed: the page is self-contained and says so in its CSP.
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage \
    --user-data-dir="$PROFILE" "$@" 2>>"$OUT_DIR/chromium.log"
}

echo "== screenshot -> $PNG"
rm -f "$PNG"
chrome --hide-scrollbars --screenshot="$PNG" --window-size=1200,2000 "file://$FIXTURE" >/dev/null
[[ -s "$PNG" ]] || { echo "FAIL: no screenshot (see $OUT_DIR/chromium.log)"; exit 1; }

echo "== page DOM -> $DOM"
chrome --dump-dom "file://$FIXTURE" >"$DOM"
[[ -s "$DOM" ]] || { echo "FAIL: empty DOM dump (see $OUT_DIR/chromium.log)"; exit 1; }

passed=0
failed=0
expect() {
  if grep -qF -- "$1" "$DOM"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "missing from the rendered page: $1"
  fi
}
expect_not() {
  if grep -qF -- "$1" "$DOM"; then
    failed=$((failed + 1))
    echo "must not be in the rendered page: $1"
  else
    passed=$((passed + 1))
  fi
}

# Header and conversation content.
expect "Fix the parser test &amp; &lt;friends&gt;"
expect "anthropic/claude-sonnet-4-5"
expect "Why does \`cargo test\` fail in parser.rs?"
expect "data:image/png;base64,"
expect "Let me run the failing test and read the parser."
expect "test tests::parses_last_line ... FAILED"
expect "<strong>bug</strong>"
expect "+41     input.lines().count()"
expect "EACCES: permission denied"
expect "$ git status --short"
expect "cancelled"
expect "context of 45,210 tokens summarized"
expect "Approach A was <strong>abandoned</strong>"
expect "Remember to run <code>cargo fmt</code>."
expect "Model switched to"
expect "Error: overloaded_error: try again later"
# Escaping survives a real parser: the hostile text is text, not markup.
expect "&lt;script&gt;alert('x')&lt;/script&gt;"
expect_not "<b>not bold</b>"
expect_not "Approach A reply"
# The inline script ran: the toolbar is visible (no hidden attribute left).
expect '<nav id="toolbar" class="toolbar">'

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
