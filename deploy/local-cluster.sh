#!/usr/bin/env bash
# A local `pi serve` cluster on 127.0.0.1, for trying the scale-out shape:
#   nats-server with JetStream (its store in the cluster's directory),
#   N workers (`pi serve --cluster`, one shared session directory, one token),
#   nginx round-robin in front (deploy/nginx-cluster.conf with its worker and
#   listen lines replaced).
#
#   deploy/local-cluster.sh up [N]     start (N workers, default 3); prints the
#                                      entry URL and the token file
#   deploy/local-cluster.sh down       stop everything it started
#   deploy/local-cluster.sh status     what runs
#
# Idempotent: `up` on a running cluster prints its address again (with another
# N it is restarted); `down` on a stopped one does nothing. No network: the
# tools come from target/tools (scripts/install-serve-tools.sh unpacks Debian's
# nats-server and nginx there) and the binary from target/ (the newer of
# release and debug; built if neither exists).
# Environment: PI_CLUSTER_DIR (default target/local-cluster), PI_CLUSTER_PORT
# (the entry port, default 8300; nats-server takes the next one, workers
# PORT+10 on), PI_BIN (a pi binary), and any agent flag after `--`:
#   deploy/local-cluster.sh up 3 -- --provider openai --model gpt-4o-mini
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${PI_CLUSTER_DIR:-$root/target/local-cluster}
front=${PI_CLUSTER_PORT:-8300}
nats_port=$((front + 1))
nats_bin=$root/target/tools/nats/usr/sbin/nats-server
nginx_bin=$root/target/tools/nginx/usr/sbin/nginx

say() { echo "local-cluster: $*" >&2; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Wait (at most $2 tenths of a second, 20 s by default) for 127.0.0.1:$1 to accept.
wait_port() {
  for _ in $(seq 1 "${2:-200}"); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

# True when nothing accepts on 127.0.0.1:$1 (another program there would
# answer in a worker's place).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop_pid() {
  local file=$1
  if alive "$file"; then
    local pid
    pid=$(cat "$file")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

pi_binary() {
  if [ -n "${PI_BIN:-}" ]; then echo "$PI_BIN"; return; fi
  # The newer of the release and debug builds (an old release binary left
  # beside a fresh debug build would run yesterday's code).
  local release=$root/target/release/pi debug=$root/target/debug/pi
  if [ -x "$release" ] && { [ ! -x "$debug" ] || [ ! "$debug" -nt "$release" ]; }; then
    echo "$release"; return
  fi
  if [ -x "$debug" ]; then echo "$debug"; return; fi
  say "building pi (cargo build -p pi-cli)"
  (cd "$root" && cargo build --quiet -p pi-cli --bin pi) >&2
  echo "$root/target/debug/pi"
}

# deploy/nginx-cluster.conf with the workers and the listen address replaced.
render_nginx() {
  local count=$1
  awk -v count="$count" -v front="$front" '
    /# END WORKERS|# END LISTEN/ { skipping = 0 }
    skipping { next }
    { print }
    /# BEGIN WORKERS/ {
      skipping = 1
      for (i = 1; i <= count; i++) printf "        server 127.0.0.1:%d max_fails=1 fail_timeout=10s;\n", front + 9 + i
    }
    /# BEGIN LISTEN/ { skipping = 1; printf "        listen 127.0.0.1:%d;\n", front }
  ' "$root/deploy/nginx-cluster.conf"
}

status() {
  local any=0
  for file in "$dir"/run/*.pid; do
    [ -e "$file" ] || continue
    if alive "$file"; then echo "$(basename "$file" .pid): running (pid $(cat "$file"))"; any=1; fi
  done
  [ "$any" = 1 ] || echo "not running"
}

down() {
  [ -d "$dir/run" ] || return 0
  local running=0
  for file in "$dir"/run/*.pid; do [ -e "$file" ] && alive "$file" && running=1; done
  stop_pid "$dir/run/nginx.pid"
  for file in "$dir"/run/worker-*.pid; do [ -e "$file" ] && stop_pid "$file"; done
  stop_pid "$dir/run/nats.pid"
  rm -f "$dir/run/workers"
  if [ "$running" = 1 ]; then say "stopped (sessions kept in $dir/sessions)"; fi
}

up() {
  local count=$1
  shift
  if [ -f "$dir/run/workers" ] && [ "$(cat "$dir/run/workers")" = "$count" ] && alive "$dir/run/nginx.pid" \
    && alive "$dir/run/nats.pid"; then
    local all=1
    for i in $(seq 1 "$count"); do alive "$dir/run/worker-$i.pid" || all=0; done
    if [ "$all" = 1 ]; then
      echo "ws://127.0.0.1:$front/rpc"
      echo "token file: $dir/token"
      return 0
    fi
  fi
  down
  for tool in "$nats_bin" "$nginx_bin"; do
    if [ ! -x "$tool" ]; then
      say "missing $tool: run scripts/install-serve-tools.sh first"
      exit 1
    fi
  done
  local pi
  pi=$(pi_binary)
  mkdir -p "$dir/run" "$dir/sessions" "$dir/nats" "$dir/nginx" "$dir/logs"
  if [ ! -s "$dir/token" ]; then
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/token")
  fi
  local wanted
  for wanted in "$front" "$nats_port" $(seq $((front + 10)) $((front + 9 + count))); do
    port_free "$wanted" || { say "port $wanted is in use: choose another PI_CLUSTER_PORT"; exit 1; }
  done
  "$nats_bin" -a 127.0.0.1 -p "$nats_port" -js -sd "$dir/nats" > "$dir/logs/nats.log" 2>&1 &
  echo $! > "$dir/run/nats.pid"
  wait_port "$nats_port" || { say "nats-server did not start (see $dir/logs/nats.log)"; down; exit 1; }
  for i in $(seq 1 "$count"); do
    local port=$((front + 9 + i))
    "$pi" serve --listen "127.0.0.1:$port" --token-file "$dir/token" --session-dir "$dir/sessions" \
      --worker-name "w$i" --cluster "nats://127.0.0.1:$nats_port" "$@" \
      > "$dir/logs/worker-$i.out" 2> "$dir/logs/worker-$i.log" &
    echo $! > "$dir/run/worker-$i.pid"
  done
  for i in $(seq 1 "$count"); do
    # A worker first joins the bus: slow on a loaded machine (60 s at most).
    { wait_port $((front + 9 + i)) 600 && alive "$dir/run/worker-$i.pid"; } || { say "worker $i did not start (see $dir/logs/worker-$i.log)"; down; exit 1; }
  done
  render_nginx "$count" > "$dir/nginx/nginx.conf"
  "$nginx_bin" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -e stderr > "$dir/logs/nginx.log" 2>&1 &
  echo $! > "$dir/run/nginx.pid"
  wait_port "$front" || { say "nginx did not start (see $dir/logs/nginx.log)"; down; exit 1; }
  echo "$count" > "$dir/run/workers"
  echo "ws://127.0.0.1:$front/rpc"
  echo "token file: $dir/token"
}

case "${1:-}" in
  up)
    shift
    count=3
    if [ $# -gt 0 ] && [ "$1" != "--" ]; then count=$1; shift; fi
    [ "${1:-}" = "--" ] && shift
    case "$count" in '' | *[!0-9]* | 0) say "N must be a positive number"; exit 2 ;; esac
    up "$count" "$@"
    ;;
  down) down ;;
  status) status ;;
  *)
    # The comment at the top of this file, up to the first line of code.
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2
    ;;
esac
