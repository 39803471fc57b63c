#!/usr/bin/env python3
"""pi serve benchmarks (release build; printed figures, not timed tests):

1. idle sessions: N WebSocket connections, each attached to its own idle
   session, in one `pi serve` process: resident memory per session and
   sessions per GiB, next to one reference pi 1.6.0 process (pi's way: one
   process per session) when it is installed;
2. streaming: S sessions prompting at once against the fake model server,
   each streaming D deltas: total deltas/s, p50/p99 delta latency (fake
   server write -> client receipt, stamped by the server) and peak RSS;
3. churn: C connect / initialize / close cycles (JSON-RPC, 8 at a time,
   sessions unloaded when idle): cycles/s and RSS before/after.

Usage: bench/serve.py [--idle N] [--streams S] [--deltas D] [--delta-ms MS]
                      [--cycles C] [--pi PATH] [--fake PATH] [--no-build]

Needs Python's `websockets` (scripts/install-serve-tools.sh puts it in
target/tools/python).
"""

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "target", "tools", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import websockets  # noqa: E402

from measure import peak_rss_kib, sandbox_env  # noqa: E402
from run import FAKE, build  # noqa: E402

PI = os.path.join(ROOT, "target", "release", "pi")

REFERENCE = os.path.join(ROOT, "target/tools/reference/node_modules/@earendil-works/pi-coding-agent/dist/cli.js")
NODE = os.path.join(ROOT, "target/tools/node/node_modules/.bin/node")
MARK = "@@SENT_US@@"
# Extra `pi serve` flags for every server (--serve-arg).
EXTRA = []


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """User + system CPU time of a live process."""
    user, system = cpu_split(pid)
    return user + system


def cpu_split(pid):
    """User and system CPU time of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def context_switches(pid):
    """Voluntary + involuntary context switches of every thread of a live process."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


class Server:
    """A `pi serve` in a sandbox; `url` is the address it printed."""

    def __init__(self, agent, cwd, *args):
        self.proc = subprocess.Popen(
            [PI, "serve", "--listen", "127.0.0.1:0", "--max-connections", "100000", "--max-sessions", "100000",
             *args, *EXTRA],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=sandbox_env(agent), cwd=cwd)
        self.url = self.proc.stdout.readline().decode().strip()
        if not self.url.startswith("ws://"):
            raise SystemExit(f"pi serve printed {self.url!r}")

    def sessions(self):
        import urllib.request
        base = self.url.replace("ws://", "http://").rsplit("/", 1)[0]
        with urllib.request.urlopen(base + "/readyz", timeout=10) as r:
            return json.loads(r.read())["sessions"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


async def attach_idle(url, n):
    conns = []
    for i in range(0, n, 100):
        batch = await asyncio.gather(*(websockets.connect(url, ping_interval=None) for _ in range(min(100, n - i))))
        for ws in batch:
            await ws.send('{"id":"1","type":"get_state"}')
        for ws in batch:
            reply = json.loads(await ws.recv())
            assert reply.get("success"), reply
        conns.extend(batch)
    return conns


def reference_rss():
    """Peak RSS (KiB) of one reference pi --mode rpc after its first get_state, or None."""
    if not (os.path.exists(REFERENCE) and os.path.exists(NODE)):
        return None
    with tempfile.TemporaryDirectory() as agent, tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.Popen([NODE, REFERENCE, "--mode", "rpc", "--no-session", "--offline"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=sandbox_env(agent), cwd=cwd)
        proc.stdin.write(b'{"type":"get_state"}\n')
        proc.stdin.flush()
        proc.stdout.readline()
        rss = peak_rss_kib(proc.pid)
        proc.stdin.close()
        proc.wait()
        return rss


async def idle(n):
    with tempfile.TemporaryDirectory() as agent, tempfile.TemporaryDirectory() as cwd:
        server = Server(agent, cwd, "--idle-unload", "3600")
        try:
            warm = await attach_idle(server.url, 1)
            base = rss_kib(server.proc.pid)
            start = time.perf_counter()
            conns = await attach_idle(server.url, n)
            elapsed = time.perf_counter() - start
            await asyncio.sleep(0.5)
            after = rss_kib(server.proc.pid)
            loaded = server.sessions()
            for ws in conns + warm:
                await ws.close()
        finally:
            server.stop()
    per = (after - base) / n
    print(f"idle sessions: {n} connections each attached to its own session ({loaded} loaded) in one process, "
          f"attached in {elapsed:.1f} s; RSS {base / 1024:.1f} -> {after / 1024:.1f} MiB: "
          f"{per:.0f} KiB per idle attached session, {1024 * 1024 / per:,.0f} sessions per GiB")
    figures = {"serve_idle_kib": per}
    ref = reference_rss()
    if ref:
        print(f"  reference pi 1.6.0: one process per session, {ref / 1024:.1f} MiB each "
              f"({1024 * 1024 / ref:,.1f} sessions per GiB; pi serve holds {ref / per:,.0f}x as many)")
        figures["reference_idle_kib"] = ref
    return figures


def fake_server(deltas, delta_ms):
    script = {"fallback": {"textChunks": [f"{MARK} "] * deltas, "delayMs": delta_ms,
                           "usage": {"promptTokens": 10, "completionTokens": deltas}}}
    path = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(script, path)
    path.close()
    proc = subprocess.Popen([FAKE, path.name], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    base_url = proc.stdout.readline().decode().strip()
    return proc, base_url, path.name


async def stream_one(url, latencies):
    async with websockets.connect(url, ping_interval=None, max_size=None) as ws:
        await ws.send('{"id":"p","type":"prompt","message":"go"}')
        count = 0
        while True:
            raw = await ws.recv()
            now = time.time() * 1e6
            if '"text_delta"' in raw:
                msg = json.loads(raw)
                latencies.append(now - int(msg["assistantMessageEvent"]["delta"]))
                count += 1
            elif raw.startswith('{"type":"agent_end"'):
                return count


async def streaming(streams, deltas, delta_ms):
    fake, base_url, script = fake_server(deltas, delta_ms)
    try:
        with tempfile.TemporaryDirectory() as agent, tempfile.TemporaryDirectory() as cwd:
            models = {"providers": {"bench": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k",
                                              "models": [{"id": "m"}]}}}
            with open(os.path.join(agent, "models.json"), "w") as f:
                json.dump(models, f)
            server = Server(agent, cwd, "--model", "bench/m")
            try:
                latencies = []
                user, system = cpu_split(server.proc.pid)
                switches = context_switches(server.proc.pid)
                start = time.perf_counter()
                counts = await asyncio.gather(*(stream_one(server.url, latencies) for _ in range(streams)))
                elapsed = time.perf_counter() - start
                user_after, system_after = cpu_split(server.proc.pid)
                user, system = user_after - user, system_after - system
                cpu = user + system
                switches = context_switches(server.proc.pid) - switches
                peak = peak_rss_kib(server.proc.pid)
            finally:
                server.stop()
    finally:
        fake.kill()
        fake.wait()
        os.unlink(script)
    total = sum(counts)
    if total != streams * deltas:
        raise SystemExit(f"received {total} deltas, expected {streams * deltas}")
    latencies.sort()
    p50 = latencies[len(latencies) // 2] / 1000
    p99 = latencies[int(len(latencies) * 0.99)] / 1000
    print(f"streaming: {streams} sessions x {deltas} deltas ({delta_ms} ms apart at the source) in {elapsed:.2f} s: "
          f"{total / elapsed:,.0f} deltas/s; delta latency p50 {p50:.1f} ms, p99 {p99:.1f} ms; "
          f"peak RSS {peak / 1024:.1f} MiB; pi serve used {cpu:.2f} s of CPU ({cpu / elapsed * 100:.0f}% of one core), "
          f"{cpu / total * 1e6:.2f} µs per relayed delta ({user / total * 1e6:.2f} user, "
          f"{system / total * 1e6:.2f} system; {switches / total:.2f} context switches)")
    return {"serve_stream_us_per_delta": cpu / total * 1e6, "serve_stream_p99_ms": p99,
            "serve_stream_switches_per_delta": switches / total,
            "serve_stream_rss_mib": peak / 1024, "serve_stream_cpu_s": cpu, "serve_stream_deltas": total}


async def streaming_marginal(streams, deltas, short, delta_ms):
    """CPU per relayed delta with each session's fixed costs (connect, prompt,
    model request) taken out: the same run with `short` deltas a stream, the
    difference divided by the extra deltas. Also the fixed cost a session."""
    long_run = await streaming(streams, deltas, delta_ms)
    short_run = await streaming(streams, short, delta_ms)
    extra = long_run["serve_stream_deltas"] - short_run["serve_stream_deltas"]
    marginal = (long_run["serve_stream_cpu_s"] - short_run["serve_stream_cpu_s"]) / extra
    fixed = (short_run["serve_stream_cpu_s"] - marginal * short_run["serve_stream_deltas"]) / streams
    print(f"streaming: {marginal * 1e6:.2f} µs of server CPU per delta beyond the first {short} of each stream "
          f"({streams} x {deltas} against {streams} x {short} deltas); {fixed * 1000:.2f} ms a session for "
          f"the rest (connection, prompt, model request)")
    figures = dict(long_run)
    figures.update({"serve_stream_marginal_us": marginal * 1e6, "serve_stream_session_ms": fixed * 1000})
    return figures


async def churn(cycles, parallel=8):
    with tempfile.TemporaryDirectory() as agent, tempfile.TemporaryDirectory() as cwd:
        server = Server(agent, cwd, "--idle-unload", "0.2")
        try:
            init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'

            async def worker(n):
                for _ in range(n):
                    async with websockets.connect(server.url, ping_interval=None) as ws:
                        await ws.send(init)
                        reply = json.loads(await ws.recv())
                        assert "result" in reply, reply

            await worker(100)  # warm up
            await asyncio.sleep(0.5)
            before = rss_kib(server.proc.pid)
            start = time.perf_counter()
            await asyncio.gather(*(worker(cycles // parallel) for _ in range(parallel)))
            elapsed = time.perf_counter() - start
            for _ in range(100):
                if server.sessions() == 0:
                    break
                await asyncio.sleep(0.1)
            # As before the cycles: half a second after the last session went.
            await asyncio.sleep(0.5)
            after = rss_kib(server.proc.pid)
            left = server.sessions()
        finally:
            server.stop()
    done = cycles // parallel * parallel
    print(f"churn: {done} connect/initialize/close cycles ({parallel} at a time) in {elapsed:.1f} s: "
          f"{done / elapsed:,.0f} cycles/s; RSS {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB after "
          f"({left} sessions left loaded)")
    return {"churn_rss_before_mib": before / 1024, "churn_rss_after_mib": after / 1024,
            "churn_growth_mib": (after - before) / 1024}


def main():
    global PI, FAKE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--delta-ms", type=int, default=10)
    parser.add_argument("--cycles", type=int, default=10000)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--pi", default=PI, help="the pi binary (default target/release/pi)")
    parser.add_argument("--fake", default=None, help="the fake model server (default target/release/fake-model-server)")
    parser.add_argument("--serve-arg", action="append", default=[], help="an extra pi serve flag (repeatable)")
    parser.add_argument("--only", choices=["idle", "streaming", "churn"], help="run one figure")
    args = parser.parse_args()
    EXTRA.extend(args.serve_arg)
    PI = os.path.abspath(args.pi)
    if args.fake:
        FAKE = os.path.abspath(args.fake)
    if not args.no_build:
        build()
    limit = raise_fd_limit()
    if limit < 2 * args.idle + 100:
        raise SystemExit(f"the open-file limit ({limit}) is too low for --idle {args.idle}")
    if args.only in (None, "idle"):
        asyncio.run(idle(args.idle))
    if args.only in (None, "streaming"):
        asyncio.run(streaming_marginal(args.streams, args.deltas, max(1, args.deltas // 10), args.delta_ms))
    if args.only in (None, "churn"):
        asyncio.run(churn(args.cycles))


if __name__ == "__main__":
    main()
