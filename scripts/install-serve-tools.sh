#!/usr/bin/env bash
# Install what the `pi serve` tests need into target/tools/ (idempotent,
# pinned, from the package registries only):
#   python/  the Python `websockets` client library (PyPI, pip --target);
#   ws/      node's `ws` client library (npm; node itself comes from
#            install-test-tools.sh);
#   nginx/   Debian's nginx package, unpacked (apt-get download + dpkg -x:
#            no service is started, nothing is installed system-wide); the
#            scale-out test runs it unprivileged with its own prefix and config.
#   nats/    Debian's nats-server package, unpacked the same way; the cluster
#            tests and deploy/local-cluster.sh run it with JetStream in a
#            temporary directory on 127.0.0.1.
# Each part prints a notice and is skipped when its client (pip, npm,
# apt-get) is missing; the tests needing it then skip, unless
# PI_RPC_REQUIRE_TOOLS=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/target/tools"

WEBSOCKETS_VERSION=15.0.1
WS_VERSION=8.18.3
NGINX_PACKAGE=nginx
NATS_PACKAGE=nats-server

# Python websockets
py_dir="$tools/python"
if [ -f "$py_dir/.websockets-$WEBSOCKETS_VERSION" ]; then
  :
elif command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
  echo "install-serve-tools: installing websockets==$WEBSOCKETS_VERSION into $py_dir" >&2
  rm -rf "$py_dir"
  mkdir -p "$py_dir"
  python3 -m pip install --quiet --disable-pip-version-check --no-input --target "$py_dir" \
    "websockets==$WEBSOCKETS_VERSION" >&2
  touch "$py_dir/.websockets-$WEBSOCKETS_VERSION"
else
  echo "install-serve-tools: python3 -m pip not found; the Python WebSocket client test will be skipped" >&2
fi

# node ws
ws_dir="$tools/ws"
if grep -qs "\"version\": *\"$WS_VERSION\"" "$ws_dir/node_modules/ws/package.json"; then
  :
elif command -v npm >/dev/null 2>&1; then
  echo "install-serve-tools: installing ws@$WS_VERSION into $ws_dir" >&2
  mkdir -p "$ws_dir"
  [ -f "$ws_dir/package.json" ] || echo '{"private": true}' > "$ws_dir/package.json"
  (cd "$ws_dir" && npm install --no-audit --no-fund --loglevel=error "ws@$WS_VERSION" >&2)
else
  echo "install-serve-tools: npm not found; the node WebSocket client test will be skipped" >&2
fi

# nginx, Debian's package, unpacked under target/tools/nginx
nginx_dir="$tools/nginx"
if [ -x "$nginx_dir/usr/sbin/nginx" ]; then
  :
elif command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
  echo "install-serve-tools: unpacking Debian's $NGINX_PACKAGE into $nginx_dir" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # The package lists may be missing on a fresh machine.
  if ! (cd "$work" && apt-get download "$NGINX_PACKAGE" >/dev/null 2>&1); then
    apt-get update -qq >/dev/null 2>&1 || true
    (cd "$work" && apt-get download "$NGINX_PACKAGE" >&2)
  fi
  mkdir -p "$nginx_dir"
  dpkg -x "$work"/"$NGINX_PACKAGE"_*.deb "$nginx_dir"
  if ! "$nginx_dir/usr/sbin/nginx" -v >/dev/null 2>&1; then
    # A library nginx links is missing: bring Debian's dependencies.
    echo "install-serve-tools: nginx needs libraries; installing them with apt-get" >&2
    apt-get install -y -qq --no-install-recommends $(dpkg-deb -f "$work"/"$NGINX_PACKAGE"_*.deb Depends |
      tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g' | grep -v '^nginx-common$' | grep -v '^$') >&2 || true
  fi
  "$nginx_dir/usr/sbin/nginx" -v >&2
else
  echo "install-serve-tools: apt-get not found; the nginx scale-out test will be skipped" >&2
fi

# nats-server, Debian's package, unpacked under target/tools/nats
nats_dir="$tools/nats"
if [ -x "$nats_dir/usr/sbin/nats-server" ]; then
  :
elif command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
  echo "install-serve-tools: unpacking Debian's $NATS_PACKAGE into $nats_dir" >&2
  nats_work=$(mktemp -d)
  if ! (cd "$nats_work" && apt-get download "$NATS_PACKAGE" >/dev/null 2>&1); then
    apt-get update -qq >/dev/null 2>&1 || true
    (cd "$nats_work" && apt-get download "$NATS_PACKAGE" >&2)
  fi
  mkdir -p "$nats_dir"
  dpkg -x "$nats_work"/"$NATS_PACKAGE"_*.deb "$nats_dir"
  rm -rf "$nats_work"
  "$nats_dir/usr/sbin/nats-server" --version >&2
else
  echo "install-serve-tools: apt-get not found; the NATS cluster tests will be skipped" >&2
fi
