#!/usr/bin/env python3
"""pi-rpc benchmarks: cold start to the first get_state response (also with
MCP servers configured, which connect in the background), peak RSS, the time
to relay a 100,000-delta stream from the fake model server, and the start of
one TypeScript extension (pi's rpc-demo.ts) in the extension host.

Usage: bench/run.py [--runs N] [--deltas N] [--reference PATH_TO_PI_CLI_JS]

Builds the release binaries first. Prints one line per figure. With
--reference, the same start-up measurement is made for the reference pi
(node dist/cli.js) for comparison.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PI = os.path.join(ROOT, "target", "release", "pi")
FAKE = os.path.join(ROOT, "target", "release", "fake-model-server")


def build():
    # Two builds: `pi` alone is the product (built with the kit, it would get
    # the kit's cargo features too, such as the protocol table's schemas).
    for package in ("pi-cli", "pi-compat"):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", package], cwd=ROOT, check=True)


def sandbox_env(agent_dir):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR")}
    env["HOME"] = agent_dir
    env["PI_CODING_AGENT_DIR"] = agent_dir
    env["RUST_LOG"] = "error"
    return env


def peak_rss_kib(pid):
    """VmHWM of a live process (peak resident set since its exec), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def cold_start(cmd, env, cwd):
    """Seconds from spawn to the first response line, and the child's peak RSS in KiB.

    The RSS is read from /proc (VmHWM) while the process is alive: rusage's
    ru_maxrss would also count the forked Python image before exec."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    proc.stdin.write(b'{"type":"get_state"}\n')
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    if not line.startswith(b'{"type":"response"'):
        raise SystemExit(f"unexpected first line: {line[:200]!r}")
    rss = peak_rss_kib(proc.pid)
    proc.stdin.close()
    proc.stdout.read()
    if proc.wait() != 0:
        raise SystemExit(f"exit status {proc.returncode}")
    return elapsed, rss


def tree_rss_kib(pid):
    """Peak RSS of a process plus that of its live children (the extension host)."""
    total = peak_rss_kib(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        children = []
    return total + sum(tree_rss_kib(c) for c in children)


def extension_start(label, cmd, env, cwd, runs):
    """First get_state answer with one extension loaded (commands wait for it to register)."""
    times, rss = [], []
    for i in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, cwd=cwd)
        proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
        proc.stdin.flush()
        for line in proc.stdout:
            if line.startswith(b'{"id":"s"') or b'"id":"s","type":"response"' in line:
                break
        elapsed = time.perf_counter() - start
        r = tree_rss_kib(proc.pid)
        proc.stdin.close()
        proc.stdout.read()
        proc.wait()
        if i > 0:  # the first run warms the caches (and jiti's transpile cache)
            times.append(elapsed)
            rss.append(r)
    print(f"{label}: with one TypeScript extension (rpc-demo.ts), first get_state response: median "
          f"{statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}, "
          f"{runs} runs); peak RSS with its children {statistics.median(rss) / 1024:.1f} MiB")


def measure_extension(args):
    example = os.path.join(ROOT, "target/tools/reference/node_modules/@earendil-works/pi-coding-agent/examples/"
                                 "extensions/rpc-demo.ts")
    host = os.path.join(ROOT, "target/tools/extension-host")
    if not os.path.exists(example) or not os.path.isdir(os.path.join(host, "node_modules", "jiti")):
        print("extension host: skipped (run scripts/install-test-tools.sh)")
        return
    with tempfile.TemporaryDirectory() as agent, tempfile.TemporaryDirectory() as cwd:
        env = sandbox_env(agent)
        env["PI_RPC_EXTENSION_HOST_DIR"] = host
        env["PI_RPC_NODE"] = args.node if args.node != "node" else env.get("PI_RPC_NODE", "node")
        extension_start("pi-rpc", [PI, "--mode", "rpc", "--no-session", "-e", example], env, cwd, max(3, args.runs // 4))
        if args.reference:
            extension_start("reference", [args.node, args.reference, "--mode", "rpc", "--no-session", "--offline",
                                          "-e", example], env, cwd, max(3, args.runs // 4))


def mcp_servers():
    """Three MCP servers for the start-up figure: server-everything twice
    (installed by scripts/install-mcp-servers.sh) and one that cannot start.
    None when the servers are not installed."""
    node = os.path.join(ROOT, "target", "tools", "node", "node_modules", ".bin", "node")
    everything = os.path.join(ROOT, "target", "tools", "mcp", "node_modules", "@modelcontextprotocol",
                              "server-everything", "dist", "index.js")
    if not (os.path.exists(node) and os.path.exists(everything)):
        return None
    return {"mcpServers": {"a": {"command": node, "args": [everything, "stdio"], "exposure": "direct"},
                           "b": {"command": node, "args": [everything, "stdio"]},
                           "missing": {"command": "/nonexistent/mcp-server"}}}


def measure_start(label, cmd, runs, mcp=None):
    with tempfile.TemporaryDirectory() as agent, tempfile.TemporaryDirectory() as cwd:
        env = sandbox_env(agent)
        if mcp is not None:
            with open(os.path.join(agent, "mcp.json"), "w") as f:
                json.dump(mcp, f)
        cold_start(cmd, env, cwd)  # warm the page cache
        times, rss = [], []
        for _ in range(runs):
            t, r = cold_start(cmd, env, cwd)
            times.append(t)
            rss.append(r)
    print(f"{label}: cold start to first get_state response: median {statistics.median(times) * 1000:.2f} ms "
          f"(min {min(times) * 1000:.2f}, max {max(times) * 1000:.2f}, {runs} runs)")
    print(f"{label}: peak RSS: median {statistics.median(rss) / 1024:.2f} MiB (max {max(rss) / 1024:.2f} MiB)")


def relay(deltas):
    with tempfile.TemporaryDirectory() as agent, tempfile.TemporaryDirectory() as cwd:
        script = os.path.join(agent, "script.json")
        chunks = [f"t{i} " for i in range(deltas)]
        with open(script, "w") as f:
            json.dump([{"textChunks": chunks, "usage": {"promptTokens": 10, "completionTokens": deltas}}], f)
        server = subprocess.Popen([FAKE, script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        base_url = server.stdout.readline().decode().strip()
        try:
            models = {"providers": {"bench": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k",
                                              "models": [{"id": "m"}]}}}
            with open(os.path.join(agent, "models.json"), "w") as f:
                json.dump(models, f)
            env = sandbox_env(agent)
            proc = subprocess.Popen([PI, "--mode", "rpc", "--no-session", "--model", "bench/m"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
            start = time.perf_counter()
            proc.stdin.write(b'{"type":"prompt","message":"go"}\n')
            proc.stdin.flush()
            updates = 0
            text_deltas = 0
            first_delta = None
            for line in proc.stdout:
                if line.startswith(b'{"type":"message_update"'):
                    updates += 1
                    if b'"text_delta"' in line:
                        text_deltas += 1
                        if first_delta is None:
                            first_delta = time.perf_counter() - start
                elif line.startswith(b'{"type":"agent_settled"'):
                    break
            elapsed = time.perf_counter() - start
            rss = peak_rss_kib(proc.pid)
            proc.stdin.close()
            proc.stdout.read()
            proc.wait()
        finally:
            server.kill()
            server.wait()
    if text_deltas != deltas:
        raise SystemExit(f"relayed {text_deltas} text deltas, expected {deltas}")
    print(f"relay: {deltas} deltas from the fake server to stdout in {elapsed * 1000:.0f} ms "
          f"({deltas / elapsed:,.0f} deltas/s; first delta after {first_delta * 1000:.1f} ms; "
          f"peak RSS {rss / 1024:.1f} MiB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--deltas", type=int, default=100_000)
    parser.add_argument("--reference", help="path to the reference pi's dist/cli.js (run with node)")
    parser.add_argument("--node", default="node", help="node binary for --reference")
    args = parser.parse_args()
    build()
    print(f"machine: {os.cpu_count()} cpus; binary {os.path.getsize(PI) / 1048576:.1f} MiB")
    measure_start("pi-rpc", [PI, "--mode", "rpc", "--no-session"], args.runs)
    servers = mcp_servers()
    if servers is not None:
        measure_start("pi-rpc, 3 MCP servers configured", [PI, "--mode", "rpc", "--no-session"], args.runs, servers)
    if args.reference:
        measure_start("reference", [args.node, args.reference, "--mode", "rpc", "--no-session", "--offline"],
                      max(3, args.runs // 4))
    relay(args.deltas)
    measure_extension(args)


if __name__ == "__main__":
    sys.exit(main())
