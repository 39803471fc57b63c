#!/usr/bin/env python3
"""pi serve --cluster benchmarks (printed figures, not timed tests), on a real
nats-server with JetStream (scripts/install-serve-tools.sh puts Debian's in
target/tools/nats) and the fake model server, all on 127.0.0.1:

1. per-delta cost through the bus: one session owned by worker A streams D
   deltas to a client on A (local), then to a client on worker B (B's mirror
   relays A's events over the bus): CPU per delta of the workers (and of
   nats-server) in each case, and the ratio;
2. failover: kill -9 of the owner mid-stream while a client stays on the
   other worker: time from the kill to the first event the new owner sends
   (the interrupted turn's report), for the default lease TTL and a short one;
3. drain: SIGTERM to a worker running N turns whose clients are on the
   other worker: time until every turn has ended and until the worker exited;
4. idle sessions on one worker, with and without --cluster: resident memory
   (anonymous) per idle attached session, of the first N (the worker's fixed cluster
   costs spread over them) and of N more (each more session's cost: the
   sessions per GiB);
5. S concurrent streams across 3 workers (50 deltas 10 ms apart each), each
   client on another worker than its session's owner: deltas/s and every
   delta received;
6. lease renewals under a burst: one worker alone with a short lease TTL,
   R sessions created at once, then three TTLs: how many renewals came late
   (more than two thirds of the TTL after the previous one), the latest, and
   how many leases expired (taken again, or lost with "No session found"
   afterwards for a never-written session).

Usage: bench/cluster.py [--deltas D] [--delta-ms MS] [--turns N] [--idle N]
                        [--streams S] [--burst R] [--burst-ttl T]
                        [--only SECTION...] [--pi PATH] [--fake PATH] [--debug]
                        [--no-build]

`--debug` measures target/debug/pi (the figures are labelled so); the
default is the release build. Needs Python's `websockets`.
"""

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "target", "tools", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import websockets  # noqa: E402

from measure import sandbox_env  # noqa: E402
from serve import attach_idle, cpu_seconds, rss_kib  # noqa: E402

NATS = os.path.join(ROOT, "target", "tools", "nats", "usr", "sbin", "nats-server")
BUILD = {"pi": "release"}
INTERRUPTED = "interrupted by the loss of its worker"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nats:
    def __init__(self, store):
        self.port = free_port()
        self.proc = subprocess.Popen([NATS, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", store],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"nats://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("nats-server did not start")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Worker:
    """One `pi serve --cluster` worker."""

    def __init__(self, name, nats, agent, shared, *args, model="bench/m", cluster=True, log=None):
        pi = BUILD.get("binary") or os.path.join(ROOT, "target", BUILD["pi"], "pi")
        joined = ["--worker-name", name, "--cluster", nats.url] if cluster else []
        env = sandbox_env(agent)
        if log:
            env["RUST_LOG"] = "info"
        self.proc = subprocess.Popen(
            [pi, "serve", "--listen", "127.0.0.1:0", "--session-dir", shared, *joined,
             *(["--model", model] if model else []), *args],
            stdout=subprocess.PIPE, stderr=log or subprocess.DEVNULL, env=env, cwd=agent)
        self.url = self.proc.stdout.readline().decode().strip()
        if not self.url.startswith("ws://"):
            raise SystemExit(f"pi serve printed {self.url!r}")

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def fake_server(deltas, delta_ms):
    script = {"fallback": {"textChunks": ["d "] * deltas, "delayMs": delta_ms,
                           "usage": {"promptTokens": 10, "completionTokens": deltas}}}
    path = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(script, path)
    path.close()
    fake = BUILD.get("fake") or os.path.join(ROOT, "target", BUILD["pi"], "fake-model-server")
    proc = subprocess.Popen([fake, path.name], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return proc, proc.stdout.readline().decode().strip(), path.name


async def recv(ws, timeout=120):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def call(ws, id, kind, **fields):
    await ws.send(json.dumps({"id": id, "type": kind, **fields}))
    while True:
        msg = await recv(ws)
        if msg.get("type") == "response" and msg.get("id") == id:
            if not msg.get("success"):
                raise SystemExit(f"{kind}: {msg}")
            return msg


async def new_session(url):
    async with websockets.connect(url, ping_interval=None) as ws:
        return (await call(ws, "s", "get_state"))["data"]["sessionId"]


async def prompt_deltas(ws, id="p"):
    """Prompt and count the deltas until the run settles."""
    await ws.send(json.dumps({"id": id, "type": "prompt", "message": "go"}))
    count = 0
    while True:
        msg = await recv(ws)
        if msg.get("type") == "message_update" and msg["assistantMessageEvent"].get("type") == "text_delta":
            count += 1
        elif msg.get("type") == "agent_settled":
            return count


async def per_delta(env, deltas, delta_ms):
    a = Worker("wa", env["nats"], env["agent"], env["shared"])
    b = Worker("wb", env["nats"], env["agent"], env["shared"])
    try:
        sid = await new_session(a.url)
        figures = {}
        for where, url in (("local", a.url), ("through the bus", b.url)):
            async with websockets.connect(f"{url}?session={sid}", ping_interval=None, max_size=None) as ws:
                await recv(ws)
                await prompt_deltas(ws)  # warm up
                before = (a.cpu(), b.cpu(), cpu_seconds(env["nats"].proc.pid))
                count = await prompt_deltas(ws)
                after = (a.cpu(), b.cpu(), cpu_seconds(env["nats"].proc.pid))
            if count != deltas:
                raise SystemExit(f"{where}: {count} deltas, expected {deltas}")
            used = [y - x for x, y in zip(before, after)]
            figures[where] = used
            print(f"  {where}: owner A {used[0] / count * 1e6:.1f} µs, worker B {used[1] / count * 1e6:.1f} µs, "
                  f"nats-server {used[2] / count * 1e6:.1f} µs of CPU per delta ({count} deltas)")
        local = sum(figures["local"][:2])
        remote = sum(figures["through the bus"][:2])
        print(f"per-delta CPU of the workers: {local / deltas * 1e6:.1f} µs local, {remote / deltas * 1e6:.1f} µs "
              f"for a client on another worker ({remote / local:.2f}x; with nats-server "
              f"{sum(figures['through the bus']) / sum(figures['local']):.2f}x)")
    finally:
        a.stop()
        b.stop()


async def failover(env, ttl):
    args = [] if ttl is None else ["--lease-ttl", str(ttl)]
    a = Worker("wa", env["nats"], env["agent"], env["shared"], *args)
    b = Worker("wb", env["nats"], env["agent"], env["shared"], *args)
    try:
        sid = await new_session(a.url)
        async with websockets.connect(f"{b.url}?session={sid}", ping_interval=None, max_size=None) as ws:
            await recv(ws)
            await ws.send(json.dumps({"id": "p", "type": "prompt", "message": "go"}))
            seen = 0
            while seen < 5:
                msg = await recv(ws)
                seen += msg.get("type") == "message_update"
            os.kill(a.proc.pid, signal.SIGKILL)
            killed = time.monotonic()
            first = None
            while True:
                msg = await recv(ws, 120)
                if msg.get("type") == "message_end" and INTERRUPTED in json.dumps(msg):
                    first = time.monotonic() - killed
                    break
    finally:
        a.stop()
        b.stop()
    label = "the default lease TTL (10 s)" if ttl is None else f"--lease-ttl {ttl}"
    print(f"failover with {label}: {first:.1f} s from kill -9 of the owner to the new owner's first event")


async def drain(env, turns):
    v = Worker("wv", env["nats"], env["agent"], env["shared"], "--drain-seconds", "60")
    o = Worker("wo", env["nats"], env["agent"], env["shared"])
    try:
        sids = [await new_session(v.url) for _ in range(turns)]
        clients = [await websockets.connect(f"{o.url}?session={sid}", ping_interval=None, max_size=None)
                   for sid in sids]
        for ws in clients:
            await recv(ws)
            await ws.send(json.dumps({"id": "p", "type": "prompt", "message": "go"}))

        async def first_delta(ws):
            while (await recv(ws)).get("type") != "message_update":
                pass

        async def settled(ws):
            while (await recv(ws)).get("type") != "agent_settled":
                pass
            return time.monotonic()

        await asyncio.gather(*(first_delta(ws) for ws in clients))
        os.kill(v.proc.pid, signal.SIGTERM)
        started = time.monotonic()
        ends = await asyncio.gather(*(settled(ws) for ws in clients))
        await asyncio.get_running_loop().run_in_executor(None, v.proc.wait)
        exited = time.monotonic() - started
        for ws in clients:
            await ws.close()
    finally:
        v.stop()
        o.stop()
    print(f"drain of {turns} running turns (clients on another worker): every turn ended "
          f"{max(ends) - started:.1f} s after SIGTERM, the worker exited after {exited:.1f} s")


# When idle sessions are measured a second time: after the burst's short-lived
# threads retire (Tokio's blocking pool keeps an idle thread 10 s) and after a
# round of lease renewals (every third of the default 10 s TTL).
SETTLED = 12


def anon_kib(pid):
    """The process's anonymous resident memory (its heaps and stacks), KiB:
    what idle sessions take. (VmRSS adds the binary's mapped pages, which the
    kernel drops and reads again under memory pressure, whatever the sessions.)"""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


async def idle(env, n):
    """Resident memory per idle session, with and without --cluster: of the
    first n sessions (0.5 s and SETTLED s after they attached, over the
    worker with one session: what the cluster costs once sessions come, its
    first renewals included, spread over n), and of n more once the first n
    settled (what each more session costs: sessions per GiB). Both workers'
    absolute memory, ready and with one session, is printed first: the
    worker's fixed cluster cost (connections, keeper thread) is paid there.
    The first n are also measured over the ready worker, each worker over
    its own (n + 1 sessions, the first one's cost included): a steadier
    baseline than the worker with one session, whose first session's cost
    moves by tens of KiB between runs."""
    figures, settled, marginal, ready, first, absolute = {}, {}, {}, {}, {}, {}
    for label, cluster in (("without --cluster", False), ("with --cluster", True)):
        # The same flags both times, without `--model` (with it, each
        # session's model registry parses the whole catalog: about 3 MiB more
        # per session, with or without --cluster).
        w = Worker("wi", env["nats"], env["agent"], env["shared"], "--idle-unload", "3600",
                   "--max-connections", "100000", "--max-sessions", "100000", cluster=cluster, model=None)
        try:
            await asyncio.sleep(0.5)
            ready[label] = (anon_kib(w.proc.pid), rss_kib(w.proc.pid))
            warm = await attach_idle(w.url, 1)
            base = anon_kib(w.proc.pid)
            first[label] = (base, rss_kib(w.proc.pid))
            conns = await attach_idle(w.url, n)
            await asyncio.sleep(0.5)
            after = anon_kib(w.proc.pid)
            await asyncio.sleep(SETTLED - 0.5)
            later = anon_kib(w.proc.pid)
            conns += await attach_idle(w.url, n)
            await asyncio.sleep(SETTLED)
            more = anon_kib(w.proc.pid)
            for ws in conns + warm:
                await ws.close()
        finally:
            w.stop()
        absolute[label] = (after, later, more)
        figures[label] = (after - base) / n
        settled[label] = (later - base) / n
        marginal[label] = (more - later) / n
    (plain_anon, plain_rss), (cl_anon, cl_rss) = ready["without --cluster"], ready["with --cluster"]
    print(f"idle worker, ready (no session): anonymous {plain_anon:,} KiB without --cluster, {cl_anon:,} KiB with it "
          f"(the worker's fixed cluster cost: {cl_anon - plain_anon:+,} KiB); VmRSS {plain_rss:,} / {cl_rss:,} KiB")
    (plain_anon, plain_rss), (cl_anon, cl_rss) = first["without --cluster"], first["with --cluster"]
    print(f"  with 1 session (the baseline below): anonymous {plain_anon:,} / {cl_anon:,} KiB "
          f"({cl_anon - plain_anon:+,} KiB); VmRSS {plain_rss:,} / {cl_rss:,} KiB")
    (pa, pl, pm), (ca, cl, cm) = absolute["without --cluster"], absolute["with --cluster"]
    print(f"  absolute anonymous, without / with --cluster: {n + 1} sessions {pa:,} / {ca:,} KiB ({ca - pa:+,}), "
          f"{SETTLED} s later {pl:,} / {cl:,} ({cl - pl:+,}), {2 * n + 1} sessions {pm:,} / {cm:,} ({cm - pm:+,})")
    plain, clustered = figures["without --cluster"], figures["with --cluster"]
    print(f"idle sessions on one worker ({n}): {plain:.0f} KiB each without --cluster "
          f"({1024 * 1024 / plain:,.0f} per GiB), {clustered:.0f} KiB with --cluster "
          f"({1024 * 1024 / clustered:,.0f} per GiB)")
    ratio = plain / clustered
    print(f"idle sessions per GiB, with --cluster / without: {ratio:.3f} "
          f"({'no worse' if ratio >= 1 else f'{(1 - ratio) * 100:.1f}% fewer'}; "
          f"{clustered - plain:+.2f} KiB a session)")
    plain, clustered = settled["without --cluster"], settled["with --cluster"]
    print(f"  {SETTLED} s later: {plain:.2f} KiB without --cluster, {clustered:.2f} KiB with it "
          f"(ratio {plain / clustered:.3f}; {clustered - plain:+.2f} KiB a session)")
    over = {label: [(absolute[label][i] - ready[label][0]) / (n + 1) for i in (0, 1)] for label in ready}
    (p0, p1), (c0, c1) = over["without --cluster"], over["with --cluster"]
    print(f"  over the ready worker ({n + 1} sessions, each worker over its own): {p0:.2f} KiB each without "
          f"--cluster, {c0:.2f} with it (ratio {p0 / c0:.3f}; {c0 - p0:+.2f} KiB a session); {SETTLED} s later "
          f"{p1:.2f} / {c1:.2f} (ratio {p1 / c1:.3f}; {c1 - p1:+.2f})")
    # The bar: sessions per GiB with --cluster no worse than without.
    plain, clustered = marginal["without --cluster"], marginal["with --cluster"]
    print(f"  {n} more sessions, {SETTLED} s after they attached: {plain:.2f} KiB each without --cluster "
          f"({1024 * 1024 / plain:,.0f} per GiB), {clustered:.2f} KiB with it ({1024 * 1024 / clustered:,.0f} per GiB; "
          f"ratio {plain / clustered:.3f}, {clustered - plain:+.2f} KiB a session)")


async def streams_across(env, streams, deltas):
    workers = [Worker(f"w{i}", env["nats"], env["agent"], env["shared"], model="short/m") for i in range(3)]
    try:
        sids = []
        for i in range(streams):
            sids.append(await new_session(workers[i % 3].url))

        async def one(i, sid):
            url = workers[(i + 1) % 3].url
            async with websockets.connect(f"{url}?session={sid}", ping_interval=None, max_size=None) as ws:
                await recv(ws)
                return await prompt_deltas(ws)

        start = time.perf_counter()
        counts = await asyncio.gather(*(one(i, sid) for i, sid in enumerate(sids)))
        elapsed = time.perf_counter() - start
    finally:
        for w in workers:
            w.stop()
    total = sum(counts)
    if total != streams * deltas:
        raise SystemExit(f"streams across workers: {total} deltas, expected {streams * deltas}")
    print(f"{streams} concurrent streams across 3 workers (each client on another worker than the owner): "
          f"{total} deltas in {elapsed:.1f} s, {total / elapsed:,.0f} deltas/s, none missing")


async def renewals(env, n, ttl):
    with tempfile.TemporaryFile("w+") as log:
        w = Worker("wr", env["nats"], env["agent"], env["shared"], "--lease-ttl", str(ttl), "--idle-unload", "3600",
                   "--max-sessions", "100000", model=None, log=log)
        try:
            start = time.perf_counter()
            sids = await asyncio.gather(*(new_session(w.url) for _ in range(n)))
            created = time.perf_counter() - start
            await asyncio.sleep(3 * ttl)
            # Every session is still there (never written: found only while loaded).
            missing = 0
            async with websockets.connect(w.url, ping_interval=None) as ws:
                for i, sid in enumerate(sids):
                    await ws.send(json.dumps({"id": f"w{i}", "type": "switch_session", "sessionPath": sid}))
                    while True:
                        msg = await recv(ws)
                        if msg.get("type") == "response" and msg.get("id") == f"w{i}":
                            break
                    missing += 0 if msg.get("success") else 1
        finally:
            w.stop()
        log.seek(0)
        text = log.read()
    late = [float(m) for m in re.findall(r"lease renewal late: ([0-9.]+)s since", text)]
    retaken = text.count("taken again under fencing epoch")
    lost = text.count("lease lost")
    print(f"lease renewals, {n} sessions created at once on one worker (--lease-ttl {ttl}, created in {created:.1f} s): "
          f"{len(late)} renewals late (latest {max(late, default=0):.2f} s after the previous one), "
          f"{retaken} leases expired and taken again, {lost} lost; {missing} sessions not found afterwards")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--delta-ms", type=int, default=2)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--stream-deltas", type=int, default=50, help="deltas of each concurrent stream")
    parser.add_argument("--burst", type=int, default=100, help="sessions created at once (renewals)")
    parser.add_argument("--burst-ttl", type=int, default=1, help="lease TTL of the renewals section, seconds")
    sections = ["per-delta", "failover", "drain", "idle", "streams", "renewals"]
    parser.add_argument("--only", nargs="+", choices=sections, default=sections)
    parser.add_argument("--pi", help="the pi binary to measure (default: target/<build>/pi)")
    parser.add_argument("--fake", help="the fake model server (default: target/<build>/fake-model-server)")
    parser.add_argument("--debug", action="store_true", help="measure the debug build")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if args.debug:
        BUILD["pi"] = "debug"
    if args.pi:
        BUILD["binary"] = os.path.abspath(args.pi)
    if args.fake:
        BUILD["fake"] = os.path.abspath(args.fake)
    if not args.no_build:
        flags = [] if args.debug else ["--release"]
        for package in ("pi-cli", "pi-compat"):
            subprocess.run(["cargo", "build", *flags, "-q", "-p", package], cwd=ROOT, check=True)
    if not os.path.exists(NATS):
        raise SystemExit(f"no nats-server at {NATS}: run scripts/install-serve-tools.sh")
    print(f"pi serve --cluster, {BUILD['pi']} build, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as store, tempfile.TemporaryDirectory() as agent, \
            tempfile.TemporaryDirectory() as shared:
        fake, base_url, script = fake_server(args.deltas, args.delta_ms)
        short, short_url, short_script = fake_server(args.stream_deltas, 10)
        nats = Nats(store)
        try:
            models = {"providers": {
                "bench": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]},
                "short": {"baseUrl": short_url, "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]},
            }}
            with open(os.path.join(agent, "models.json"), "w") as f:
                json.dump(models, f)
            env = {"nats": nats, "agent": agent, "shared": shared}
            if "per-delta" in args.only:
                asyncio.run(per_delta(env, args.deltas, args.delta_ms))
            if "failover" in args.only:
                asyncio.run(failover(env, None))
                asyncio.run(failover(env, 3))
            if "drain" in args.only:
                asyncio.run(drain(env, args.turns))
            if "idle" in args.only:
                asyncio.run(idle(env, args.idle))
            if "streams" in args.only:
                asyncio.run(streams_across(env, args.streams, args.stream_deltas))
            if "renewals" in args.only:
                asyncio.run(renewals(env, args.burst, args.burst_ttl))
        finally:
            nats.stop()
            for proc, path in ((fake, script), (short, short_script)):
                proc.kill()
                proc.wait()
                if os.path.exists(path):
                    os.unlink(path)


if __name__ == "__main__":
    main()
