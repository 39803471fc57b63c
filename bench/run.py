#!/usr/bin/env python3
"""pi-rpc benchmarks, side by side with the reference pi 1.6.0.

Usage: bench/run.py [--reference PATH_TO_PI_CLI_JS | --no-reference] [--node NODE] [--repeat N]
                    [--only start,relay,sessions,spaced,long,bursts,extension,settled,serve] [--sizes 1,10,100]
                    [--turns 2000] [--pi PATH] [--fake PATH] [--no-build]

Figures (each a median of --repeat runs, with the range in brackets):
- start: cold start to the first `get_state` answer and the peak RSS there
  (also with three MCP servers configured, for both);
- relay: 20,000 and 100,000 text deltas streamed by the fake model server
  and relayed to stdout: wall time, agent CPU, per delta, context switches,
  and the fake server's and this script's own CPU in the same run (neither
  must be the bottleneck);
- sessions: generated sessions of 1 / 10 / 100 MB (bench/session_gen.py,
  pi v3 format, deterministic) opened with `--session`: first `get_state`,
  `get_messages` answered, peak RSS;
- spaced: the 100 MB session written with JSON spacing (`", "`, `": "`);
- long: a long-lived session: --turns turns (each a prompt, a `read` tool
  call of a 45 KB file, its result and an answer; about 50 KB of session a
  turn) driven through the fake model server in one process, the context
  compacted as it fills (a 64k-token window): RSS after the last turn;
- bursts: 10,000 and 100,000 `get_state` piped at once, all answered;
- extension: start with one TypeScript extension (pi's rpc-demo.ts): first
  `get_state` and peak RSS; pi-rpc's own start (the first `get_state` less
  the time it waited for its extension host, as pi-rpc logs it) against pi's
  start with the extension, and the host's own start against pi's extension
  load time (pi's start with the extension less without); and when the
  extension's `session_start` handler has run (its `setTitle` request is out);
- settled: a prompt's run (a short reply) to its `agent_settled`, with no
  extension and with one TypeScript extension that has an `agent_settled`
  handler (awaited before the client's `agent_settled`, as pi awaits it):
  what awaiting it costs a run;
- serve: `pi serve` (bench/serve.py): memory per idle attached session
  (next to one pi 1.6.0 process per session, pi's way), 200 concurrent
  streams (server CPU per relayed delta), connection churn (RSS before and
  after).

The machine is shared: the 1-minute load average is recorded when each
figure is taken and printed beside it in the closing table.

With the reference (pi's dist/cli.js, run with --node; by default the one
scripts/install-reference.sh puts in target/tools/reference), each figure is also
measured for the reference in the same run, and a closing table prints the
ratios next to the goals of issue 26. Builds the release binaries first.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from measure import Agent, Figure, Usage, is_response, peak_rss_kib, sandbox_env  # noqa: E402
import session_gen  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE = os.path.join(ROOT, "target", "release", "fake-model-server")
MIB = 1024 * 1024
DEFAULT_REFERENCE = os.path.join(ROOT, "target", "tools", "reference", "node_modules", "@earendil-works",
                                 "pi-coding-agent", "dist", "cli.js")
DEFAULT_NODE = os.path.join(ROOT, "target", "tools", "node", "node_modules", ".bin", "node")


def build():
    # Two builds: `pi` alone is the product (built with the kit, it would get
    # the kit's cargo features too, such as the protocol table's schemas).
    for package in ("pi-cli", "pi-compat"):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", package], cwd=ROOT, check=True)


class Impl:
    """How to start one implementation."""

    def __init__(self, name, argv, extra_args=()):
        self.name, self.argv, self.extra_args = name, list(argv), list(extra_args)

    def cmd(self, *args):
        return self.argv + list(args) + self.extra_args


def models_json(agent_dir, base_url):
    models = {"providers": {"bench": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k",
                                      "models": [{"id": "m"}]}}}
    with open(os.path.join(agent_dir, "models.json"), "w") as f:
        json.dump(models, f)


# ----- start-up ------------------------------------------------------------

def cold_start(impl, env, cwd):
    agent = Agent(impl.cmd("--mode", "rpc", "--no-session"), env, cwd)
    agent.send(b'{"type":"get_state"}\n')
    _, _, elapsed = agent.until(is_response)
    rss = agent.rss_kib()
    agent.close()
    return elapsed, rss


def measure_start(impl, runs, label=None, mcp=None, prefix="start"):
    with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
        if mcp is not None:
            with open(os.path.join(agent_dir, "mcp.json"), "w") as f:
                json.dump(mcp, f)
        env = sandbox_env(agent_dir)
        cold_start(impl, env, cwd)  # warm the page cache
        samples = [cold_start(impl, env, cwd) for _ in range(runs)]
    times, rss = Figure(s[0] for s in samples), Figure(s[1] for s in samples)
    print(f"{label or impl.name}: cold start to first get_state: {times.fmt(1000, ' ms', 2)}, "
          f"peak RSS {rss.fmt(1 / 1024, ' MiB', 1)} ({runs} runs)")
    return {f"{prefix}_ms": times.median * 1000, f"{prefix}_rss_mib": rss.median / 1024}


def mcp_servers():
    """Three MCP servers: server-everything twice (scripts/install-mcp-servers.sh) and one that cannot start."""
    node = os.path.join(ROOT, "target", "tools", "node", "node_modules", ".bin", "node")
    everything = os.path.join(ROOT, "target", "tools", "mcp", "node_modules", "@modelcontextprotocol",
                              "server-everything", "dist", "index.js")
    if not (os.path.exists(node) and os.path.exists(everything)):
        return None
    return {"mcpServers": {"a": {"command": node, "args": [everything, "stdio"], "exposure": "direct"},
                           "b": {"command": node, "args": [everything, "stdio"]},
                           "missing": {"command": "/nonexistent/mcp-server"}}}


# ----- relay ---------------------------------------------------------------

def relay_once(impl, deltas, script):
    with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
        server = subprocess.Popen([FAKE, script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            base_url = server.stdout.readline().decode().strip()
            models_json(agent_dir, base_url)
            agent = Agent(impl.cmd("--mode", "rpc", "--no-session", "--model", "bench/m"), sandbox_env(agent_dir), cwd)
            agent.send(b'{"type":"get_state"}\n')
            agent.until(is_response)
            before, server_before = agent.usage(), Usage.of(server.pid)
            reader_before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.perf_counter()
            agent.send(b'{"type":"prompt","message":"go"}\n')
            text_deltas, first = 0, None
            while True:
                item = agent.line()
                if item is None:
                    raise SystemExit(f"{impl.name}: output ended during the relay")
                head = item[0]
                if head.startswith(b'{"type":"message_update"'):
                    if b'"text_delta"' in head:
                        text_deltas += 1
                        if first is None:
                            first = time.perf_counter() - start
                elif head.startswith(b'{"type":"agent_end"') or head.startswith(b'{"type":"agent_settled"'):
                    break
            wall = time.perf_counter() - start
            used, server_used = agent.usage() - before, Usage.of(server.pid) - server_before
            reader = resource.getrusage(resource.RUSAGE_SELF)
            reader_cpu = (reader.ru_utime + reader.ru_stime) - (reader_before.ru_utime + reader_before.ru_stime)
            rss = agent.rss_kib()
            agent.close()
        finally:
            server.kill()
            server.wait()
    if text_deltas != deltas:
        raise SystemExit(f"{impl.name}: relayed {text_deltas} text deltas, expected {deltas}")
    return {"wall": wall, "cpu": used.cpu, "switches": used.voluntary + used.involuntary, "first": first,
            "rss": rss, "server_cpu": server_used.cpu, "reader_cpu": reader_cpu}


def measure_relay(impl, deltas, repeat):
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "script.json")
        with open(script, "w") as f:
            json.dump([{"textChunks": [f"t{i} " for i in range(deltas)],
                        "usage": {"promptTokens": 10, "completionTokens": deltas}}], f)
        runs = [relay_once(impl, deltas, script) for _ in range(repeat)]
    fig = {k: Figure(r[k] for r in runs) for k in runs[0]}
    print(f"{impl.name}: relay of {deltas:,} deltas: wall {fig['wall'].fmt(1000, ' ms')}, "
          f"agent CPU {fig['cpu'].fmt(1000, ' ms')} = {fig['cpu'].median / deltas * 1e6:.2f} µs/delta, "
          f"{fig['switches'].median / deltas:.3f} context switches/delta, first delta after "
          f"{fig['first'].median * 1000:.1f} ms, peak RSS {fig['rss'].median / 1024:.1f} MiB; "
          f"fake server CPU {fig['server_cpu'].fmt(1000, ' ms')}, this script's reading CPU "
          f"{fig['reader_cpu'].fmt(1000, ' ms')}")
    return {f"relay{deltas}_wall_ms": fig["wall"].median * 1000, f"relay{deltas}_cpu_ms": fig["cpu"].median * 1000,
            f"relay{deltas}_cpu_us_per_delta": fig["cpu"].median / deltas * 1e6,
            f"relay{deltas}_server_cpu_ms": fig["server_cpu"].median * 1000}


# ----- sessions ------------------------------------------------------------

def session_once(impl, path, workdir):
    copy = os.path.join(workdir, "open.jsonl")
    shutil.copyfile(path, copy)
    with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
        models_json(agent_dir, "http://127.0.0.1:9")
        agent = Agent(impl.cmd("--mode", "rpc", "--session", copy), sandbox_env(agent_dir), cwd)
        agent.send(b'{"type":"get_state"}\n')
        _, _, state = agent.until(is_response)
        agent.send(b'{"type":"get_messages"}\n')
        head, size, messages = agent.until(lambda h: is_response(h, "get_messages"))
        if b'"success":true' not in head:
            raise SystemExit(f"{impl.name}: get_messages failed: {head[:200]!r}")
        rss = agent.rss_kib()
        agent.close()
    os.remove(copy)
    return {"state": state, "messages": messages, "rss": rss, "size": size}


def measure_session(impl, path, repeat, workdir, label):
    runs = [session_once(impl, path, workdir) for _ in range(repeat)]
    fig = {k: Figure(r[k] for r in runs) for k in runs[0]}
    print(f"{impl.name}: {label}: first get_state {fig['state'].fmt(1000, ' ms')}, get_messages answered "
          f"{fig['messages'].fmt(1000, ' ms')} ({fig['size'].median / MIB:.1f} MiB reply), "
          f"peak RSS {fig['rss'].fmt(1 / 1024, ' MiB', 1)}")
    return {"state_ms": fig["state"].median * 1000, "messages_ms": fig["messages"].median * 1000,
            "rss_mib": fig["rss"].median / 1024}


# ----- a long-lived session ------------------------------------------------

LONG_WINDOW = 64_000  # tokens: the bench model's context window
SUMMARY_MARK = "context summarization assistant"  # in pi's summarisation system prompt


def long_script():
    """The fake model's script: a prompt gets a `read` call, its result an
    answer whose usage fills the window (so the context is compacted after
    each run), a summarisation request a short summary."""
    full = {"promptTokens": LONG_WINDOW - 4_000, "completionTokens": 20}
    small = {"promptTokens": 1_000, "completionTokens": 20}
    call = {"id": "call_read", "name": "read", "arguments": {"path": "big.txt"}}
    return {"markers": [
        {"marker": SUMMARY_MARK, "scope": "anywhere", "reply": {"text": "## Goal\nBench turns.", "usage": small}},
        {"marker": "@@BENCH_FILE@@", "reply": {"text": "Read it.", "usage": full}},
        {"marker": "@@BENCH_TURN@@", "reply": {"toolCalls": [call], "usage": small}},
    ], "fallback": {"text": "ok", "usage": small}}


def big_file(path, size=45_000):
    """About `size` bytes of numbered source lines (under `read`'s 2,000-line and 50 KB limits)."""
    lines, total, n = ["// @@BENCH_FILE@@"], 20, 0
    while total < size:
        n += 1
        line = f"{n:5}\tlet value_{n} = compute(\"entry {n}\", {n * 7 % 1000}); // é → {n % 97}"
        lines.append(line)
        total += len(line.encode()) + 1
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def measure_long(impl, turns):
    with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd, \
            tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "script.json")
        with open(script, "w") as f:
            json.dump(long_script(), f)
        big_file(os.path.join(cwd, "big.txt"))
        server = subprocess.Popen([FAKE, script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            base_url = server.stdout.readline().decode().strip()
            models = {"providers": {"bench": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k",
                                              "models": [{"id": "m", "contextWindow": LONG_WINDOW,
                                                          "maxTokens": 8_000}]}}}
            with open(os.path.join(agent_dir, "models.json"), "w") as f:
                json.dump(models, f)
            agent = Agent(impl.cmd("--mode", "rpc", "--model", "bench/m"), sandbox_env(agent_dir), cwd)
            agent.send(b'{"type":"get_state"}\n')
            agent.until(is_response)
            start = time.perf_counter()
            compactions = 0
            # Turn times of the first and the last tenth: a turn must not slow as the history grows.
            tenth = max(1, turns // 10)
            first_tenth = last_tenth = 0.0
            for n in range(turns):
                if n == tenth:
                    first_tenth = time.perf_counter() - start
                if n == turns - tenth:
                    last_tenth = time.perf_counter()
                agent.send(json.dumps({"type": "prompt", "message": f"@@BENCH_TURN@@ turn {n}"}).encode() + b"\n")
                while True:
                    item = agent.line(300)
                    if item is None:
                        raise SystemExit(f"{impl.name}: output ended at turn {n}")
                    head = item[0]
                    if head.startswith(b'{"type":"compaction_end"'):
                        compactions += 1
                    elif head.startswith(b'{"type":"agent_settled"'):
                        break
            end = time.perf_counter()
            elapsed = end - start
            last_tenth = end - last_tenth
            rss = current_rss_kib(agent.pid)
            peak = agent.rss_kib()
            sessions = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(agent_dir, "sessions")) for f in fs]
            size = sum(os.path.getsize(p) for p in sessions)
            agent.close()
        finally:
            server.kill()
            server.wait()
    print(f"{impl.name}: long-lived session, {turns:,} turns with tool results in {elapsed:.1f} s "
          f"({elapsed / turns * 1000:.1f} ms a turn; {first_tenth / tenth * 1000:.1f} ms over the first {tenth:,}, "
          f"{last_tenth / tenth * 1000:.1f} ms over the last {tenth:,}; {compactions:,} compactions), "
          f"session file {size / MIB:.1f} MiB: RSS after the last turn {rss / 1024:.1f} MiB (peak {peak / 1024:.1f} MiB)")
    return {"long_rss_mib": rss / 1024, "long_peak_mib": peak / 1024, "long_turn_ms": elapsed / turns * 1000,
            "long_turn_first_ms": first_tenth / tenth * 1000, "long_turn_last_ms": last_tenth / tenth * 1000}


def current_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# ----- bursts --------------------------------------------------------------

# Every answer of the burst starts so (pi and pi-rpc alike: no id was sent).
BURST_ANSWER = b'{"type":"response","command":"get_state","success":true'


def burst_once(impl, count):
    with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
        agent = Agent(impl.cmd("--mode", "rpc", "--no-session"), sandbox_env(agent_dir), cwd)
        agent.send(b'{"type":"get_state"}\n')
        agent.until(is_response)
        rss_idle = agent.rss_kib()
        before = agent.usage()
        payload = b'{"type":"get_state"}\n' * count
        start = time.perf_counter()
        reader_before = resource.getrusage(resource.RUSAGE_SELF)
        # Written by a thread: the pipe fills while the answers are read.
        writer = threading.Thread(target=agent.send, args=(payload,))
        writer.start()
        # The answers are counted over whole chunks (not split into lines by this
        # script), so the figure is the agent's, for both programs alike.
        answered = agent.count(BURST_ANSWER, count)
        elapsed = time.perf_counter() - start
        writer.join()
        reader = resource.getrusage(resource.RUSAGE_SELF)
        reader_cpu = (reader.ru_utime + reader.ru_stime) - (reader_before.ru_utime + reader_before.ru_stime)
        used = agent.usage() - before
        rss = agent.rss_kib()
        agent.close()
    if answered != count:
        raise SystemExit(f"{impl.name}: {answered} of {count:,} get_state answered")
    return {"wall": elapsed, "cpu": used.cpu, "rss": rss, "rss_idle": rss_idle, "reader_cpu": reader_cpu}


def measure_burst(impl, count, repeat):
    runs = [burst_once(impl, count) for _ in range(repeat)]
    fig = {k: Figure(r[k] for r in runs) for k in runs[0]}
    print(f"{impl.name}: {count:,} get_state piped at once, all answered in {fig['wall'].fmt(1000, ' ms')} "
          f"(CPU {fig['cpu'].fmt(1000, ' ms')} = {fig['cpu'].median / count * 1e6:.2f} µs a get_state); "
          f"peak RSS {fig['rss'].fmt(1 / 1024, ' MiB', 1)} (idle {fig['rss_idle'].median / 1024:.1f} MiB); "
          f"this script's reading CPU {fig['reader_cpu'].fmt(1000, ' ms')}")
    return {f"burst{count}_ms": fig["wall"].median * 1000, f"burst{count}_rss_mib": fig["rss"].median / 1024,
            f"burst{count}_idle_rss_mib": fig["rss_idle"].median / 1024}


# ----- extension host ------------------------------------------------------

def tree_rss_kib(pid):
    """Peak RSS of a process plus that of its live children (the extension host)."""
    total = peak_rss_kib(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        children = []
    return total + sum(tree_rss_kib(c) for c in children)


# What pi-rpc logs (RUST_LOG) when it starts an extension's process and when
# the extension has started (registered and answered its start-up
# `session_start`): the time between is pi-rpc waiting for the extension host.
EXTENSION_LOG = "error,pi_extensions::extensions::process=debug,pi_agent::agent::actor::extension_hooks=debug"


def logged_at(text, marker):
    """Wall-clock time (seconds) of the first stderr line of tracing's format
    (`2026-12-02T23:59:33.123456Z DEBUG …`) that contains `marker`."""
    import datetime
    for line in text.splitlines():
        if marker in line:
            stamp = line.split(" ", 1)[0].replace("Z", "+00:00")
            return datetime.datetime.fromisoformat(stamp).timestamp()
    return None


def measure_extension(impl, node, runs):
    """Start with one TypeScript extension. pi loads an extension in its own
    process; pi-rpc runs it in the extension host (a node process) and waits
    for it before answering, as pi does. As issue 26 reads, pi-rpc's own start
    (the first `get_state` less the time it waited for the host, from starting
    the host's process until the extension has started) is compared with pi's
    start with the extension, and the host's own start with pi's extension
    load time (pi's first `get_state` with the extension less without). No
    answer changes: pi-rpc still answers after the extension has started."""
    example = os.path.join(ROOT, "target/tools/reference/node_modules/@earendil-works/pi-coding-agent/examples/"
                                 "extensions/rpc-demo.ts")
    host = os.path.join(ROOT, "target/tools/extension-host")
    if not os.path.exists(example) or not os.path.isdir(os.path.join(host, "node_modules", "jiti")):
        print("extension host: skipped (run scripts/install-test-tools.sh)")
        return {}
    ours = impl.name == "pi-rpc"
    times, ready, rss, own, waits, plain = [], [], [], [], [], []
    with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
        extra = {"PI_RPC_EXTENSION_HOST_DIR": host, "PI_RPC_NODE": node}
        if ours:
            extra["RUST_LOG"] = EXTENSION_LOG
        env = sandbox_env(agent_dir, extra)
        for i in range(runs + 1):
            with tempfile.TemporaryFile() as log:
                agent = Agent(impl.cmd("--mode", "rpc", "--no-session", "-e", example), env, cwd,
                              stderr=log if ours else subprocess.DEVNULL)
                agent.send(b'{"id":"s","type":"get_state"}\n')
                answered, loaded = None, None
                while answered is None or loaded is None:
                    head, _, at = agent.until(lambda h: True)
                    if head.startswith(b'{"id":"s"') or b'"id":"s","type":"response"' in head:
                        answered = at
                    elif b'"method":"setTitle"' in head:
                        loaded = at
                own_rss = agent.rss_kib()
                r = tree_rss_kib(agent.pid)
                agent.close()
                wait = None
                if ours:
                    log.seek(0)
                    text = log.read().decode(errors="replace")
                    spawned, started = logged_at(text, ": process started"), logged_at(text, ": started")
                    if spawned is None or started is None:
                        raise SystemExit("pi-rpc did not log its extension's start (RUST_LOG=" + EXTENSION_LOG + ")")
                    wait = started - spawned
            # pi's extension load time: its start without the extension, in the same loop.
            plain_start = None if ours else cold_start(impl, env, cwd)[0]
            if i > 0:  # the first run warms the caches (and jiti's transpile cache)
                times.append(answered)
                ready.append(loaded)
                rss.append(r)
                own.append(own_rss)
                if ours:
                    waits.append(wait)
                else:
                    plain.append(plain_start)
    figures = {"ext_ms": Figure(times).median * 1000, "ext_rss_mib": Figure(own).median / 1024,
               "ext_ready_ms": Figure(ready).median * 1000}
    print(f"{impl.name}: with one TypeScript extension (rpc-demo.ts), first get_state: "
          f"{Figure(times).fmt(1000, ' ms')}, peak RSS {Figure(own).median / 1024:.1f} MiB "
          f"({Figure(rss).median / 1024:.1f} MiB with its children); the extension's session_start ran after "
          f"{Figure(ready).fmt(1000, ' ms')}")
    if ours:
        mine = Figure(t - w for t, w in zip(times, waits))
        print(f"  pi-rpc's own start (first get_state less its wait for the extension host): "
              f"{mine.fmt(1000, ' ms', 2)}; the host's own start (its process started -> the extension started, "
              f"session_start answered): {Figure(waits).fmt(1000, ' ms')}")
        figures.update({"ext_own_ms": mine.median * 1000, "ext_host_ms": Figure(waits).median * 1000})
    else:
        load = Figure(times).median - Figure(plain).median
        print(f"  pi's start without the extension: {Figure(plain).fmt(1000, ' ms')}; its extension load time "
              f"(median with less median without): {load * 1000:,.0f} ms")
        # pi has no host: its whole start is its own; the host compares with pi's load time.
        figures.update({"ext_own_ms": figures["ext_ms"], "ext_host_ms": load * 1000})
    return figures


# ----- pi serve ------------------------------------------------------------

# Extensions whose handler does nothing: one of `agent_settled` (awaited
# before the client's `agent_settled`), one of an event no run awaits.
SETTLED_HANDLER = """export default function (pi) {
  pi.on("agent_settled", async () => {});
}
"""
OTHER_HANDLER = SETTLED_HANDLER.replace("agent_settled", "session_shutdown")


def measure_settled(impl, node, repeat):
    """A prompt (a four-word reply) to its `agent_settled`, each run in one
    process after a warm-up run, with no extension, with one whose handler
    no run awaits, and with one that has an `agent_settled` handler: both
    programs await that handler before the client's `agent_settled`."""
    host = os.path.join(ROOT, "target/tools/extension-host")
    if not os.path.isdir(os.path.join(host, "node_modules", "jiti")):
        print("settled: skipped (run scripts/install-test-tools.sh)")
        return {}
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "script.json")
        with open(script, "w") as f:
            json.dump([{"textChunks": ["a ", "short ", "reply ", "here"]}] * (repeat + 1), f)
        modules = {}
        for name, source in (("settled.ts", SETTLED_HANDLER), ("other.ts", OTHER_HANDLER)):
            modules[name] = os.path.join(tmp, name)
            with open(modules[name], "w") as f:
                f.write(source)
        variants = (("settled_ms", "no extension", []),
                    ("settled_other_ms", "one extension, no agent_settled handler", ["-e", modules["other.ts"]]),
                    ("settled_handler_ms", "one agent_settled handler", ["-e", modules["settled.ts"]]))
        for key, label, extension in variants:
            with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
                server = subprocess.Popen([FAKE, script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                try:
                    models_json(agent_dir, server.stdout.readline().decode().strip())
                    env = sandbox_env(agent_dir, {"PI_RPC_EXTENSION_HOST_DIR": host, "PI_RPC_NODE": node})
                    agent = Agent(impl.cmd("--mode", "rpc", "--no-session", "--model", "bench/m", *extension), env, cwd)
                    agent.send(b'{"type":"get_state"}\n')
                    agent.until(is_response)
                    runs = []
                    for _ in range(repeat + 1):
                        start = time.perf_counter()
                        agent.send(b'{"type":"prompt","message":"go"}\n')
                        agent.until(lambda h: h.startswith(b'{"type":"agent_settled"'))
                        runs.append(time.perf_counter() - start)
                    agent.close()
                finally:
                    server.kill()
                    server.wait()
            figure = Figure(runs[1:])  # the first run warms up
            print(f"{impl.name}: prompt to agent_settled, {label}: {figure.fmt(1000, ' ms', 1)} ({repeat} runs)")
            figures[key] = figure.median * 1000
    return figures


def measure_serve(pi, idle_sessions):
    """bench/serve.py's three figures (its defaults: 200 streams of 200 deltas, 10,000 churn cycles)."""
    import asyncio
    import serve
    serve.PI = pi
    limit = serve.raise_fd_limit()
    figures = {}
    if limit >= 2 * idle_sessions + 100:
        figures.update(asyncio.run(serve.idle(idle_sessions)))
        figures["serve_idle_per_gib"] = 1024 * 1024 / figures["serve_idle_kib"]
    else:
        print(f"pi serve idle sessions: skipped (open-file limit {limit})")
    figures.update(asyncio.run(serve.streaming_marginal(200, 200, 20, 10)))
    figures.update(asyncio.run(serve.churn(10_000)))
    return figures


# ----- the closing table ---------------------------------------------------

# (label, key, unit, goal): the goal is pi's figure over ours (times faster,
# or times less memory); None: printed without a goal.
GOALS = [
    ("cold start to first get_state", "start_ms", "ms", 200),
    ("peak RSS at that point", "start_rss_mib", "MiB", 20),
    ("same, 3 MCP servers configured: first get_state", "mcp_ms", "ms", 200),
    ("same, 3 MCP servers: peak RSS", "mcp_rss_mib", "MiB", 20),
    ("one TypeScript extension: pi-rpc's own start (first get_state less its wait for the extension host) "
     "vs pi's first get_state with the extension", "ext_own_ms", "ms", 200),
    ("same, peak RSS (pi-rpc without the host)", "ext_rss_mib", "MiB", 20),
    ("the extension host's own start (its process started -> the extension started) vs pi's extension load time "
     "(median first get_state with the extension less without)", "ext_host_ms", "ms", None),
    ("one TypeScript extension: first get_state, the host's start included", "ext_ms", "ms", None),
    ("same, the extension's session_start ran (its setTitle request is out)", "ext_ready_ms", "ms", None),
    ("a prompt to its agent_settled (a short reply), no extension", "settled_ms", "ms", None),
    ("same, one extension with no agent_settled handler", "settled_other_ms", "ms", None),
    ("same, one extension's agent_settled handler awaited", "settled_handler_ms", "ms", None),
    ("20,000 deltas relayed, wall", "relay20000_wall_ms", "ms", None),
    ("20,000 deltas, agent CPU", "relay20000_cpu_ms", "ms", None),
    ("100,000 deltas relayed, wall", "relay100000_wall_ms", "ms", 10),
    ("100,000 deltas, agent CPU", "relay100000_cpu_ms", "ms", 25),
    ("same, agent CPU per delta", "relay100000_cpu_us_per_delta", "µs", 25),
    ("100,000 deltas, fake server CPU", "relay100000_server_cpu_ms", "ms", None),
    ("open 100 MB session, first get_state", "s100_state_ms", "ms", 40),
    ("same, get_messages answered", "s100_messages_ms", "ms", 10),
    ("same, peak RSS", "s100_rss_mib", "MiB", 10),
    ("100 MB session with JSON spacing, first get_state", "spaced_state_ms", "ms", 20),
    ("same, get_messages answered", "spaced_messages_ms", "ms", None),
    ("same, peak RSS", "spaced_rss_mib", "MiB", None),
    ("long-lived session: RSS after the last turn", "long_rss_mib", "MiB", 10),
    ("same, peak RSS", "long_peak_mib", "MiB", None),
    ("same, time a turn", "long_turn_ms", "ms", None),
    ("same, time a turn over the first tenth of the turns", "long_turn_first_ms", "ms", None),
    ("same, time a turn over the last tenth of the turns", "long_turn_last_ms", "ms", None),
    ("10,000 get_state piped at once", "burst10000_ms", "ms", 10),
    ("100,000 get_state piped at once", "burst100000_ms", "ms", None),
    ("same, peak RSS", "burst100000_rss_mib", "MiB", None),
    ("pi serve: memory per idle attached session (pi: one process each)", "serve_idle_kib", "KiB", None),
]

# Goals on pi-rpc's own figures: (label, key, unit, holds(ours), what).
ABSOLUTE_GOALS = [
    ("long-lived session: RSS after the last turn", "long_rss_mib", "MiB",
     lambda f: f["long_rss_mib"] <= 64 + LONG_WINDOW * 4 / MIB, "≤ 64 MiB + the context window (64k tokens, ~0.2 MiB)"),
    ("pi serve: idle attached sessions per GiB", "serve_idle_per_gib", "",
     lambda f: f["serve_idle_per_gib"] >= 16_000, "≥ 16,000"),
    ("pi serve: 200 concurrent streams, server CPU per relayed delta (all the run's CPU over its deltas)",
     "serve_stream_us_per_delta", "µs", lambda f: f["serve_stream_us_per_delta"] <= 5, "≤ 5 µs"),
    ("same, per delta beyond each stream's first 20 (a session's fixed costs taken out)",
     "serve_stream_marginal_us", "µs", lambda f: f["serve_stream_marginal_us"] <= 5, "≤ 5 µs"),
    ("same, a session's fixed CPU (connection, prompt, model request)", "serve_stream_session_ms", "ms",
     lambda f: True, "–"),
    ("pi serve: connection churn, RSS growth (before → after)", "churn_growth_mib", "MiB",
     lambda f: f["churn_growth_mib"] <= 1 + 0.05 * f["churn_rss_before_mib"], "flat (≤ 1 MiB + 5%)"),
]


def closing_table(ours, ref, loads):
    """The figures of issue 26 side by side, each with its goal and the load
    average when it was taken (pi-rpc / pi)."""
    def load(key):
        a, b = loads.get(("pi-rpc", key)), loads.get(("pi 1.6.0", key))
        return " / ".join(f"{x:.1f}" for x in (a, b) if x is not None) or "–"

    print()
    print("| figure | pi-rpc | pi 1.6.0 | ratio | goal | load (pi-rpc / pi) |")
    print("|---|---|---|---|---|---|")
    for label, key, unit, goal in GOALS:
        if key not in ours:
            continue
        a, b = ours[key], ref.get(key)
        digits = 2 if unit == "µs" else 1 if unit in ("MiB", "KiB") or a < 10 else 0
        cells = [label, f"{a:,.{digits}f} {unit}"]
        if b is None:
            cells += ["–", "–", "–"]
        else:
            ratio = b / a if a > 0 else float("inf")
            less = unit in ("MiB", "KiB")
            if goal is None:
                met = ""
            elif less:
                met = f"≤ {1 / goal:.2g}× {'met' if ratio >= goal else '**not met**'}"
            else:
                met = f"≥ {goal}× {'met' if ratio >= goal else '**not met**'}"
            shown = f"{ratio:.1f}×" if not less else f"{1 / ratio:.3g}× ({ratio:,.1f}× less)"
            cells += [f"{b:,.{digits}f} {unit}", shown, met]
        print("| " + " | ".join(cells + [load(key)]) + " |")
    for label, key, unit, holds, what in ABSOLUTE_GOALS:
        if key in ours:
            value = ours[key]
            met = "" if what == "–" else "met" if holds(ours) else "**not met**"
            shown = f"{value:,.0f}" if not unit else f"{value:,.2f} {unit}"
            goal = what if what == "–" else f"{what}: {met}"
            print(f"| {label} | {shown} | – | – | {goal} | {load(key)} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="cold starts measured (reference: a quarter)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each other figure")
    parser.add_argument("--only", default="start,relay,sessions,spaced,long,bursts,extension,settled,serve")
    parser.add_argument("--idle", type=int, default=2000, help="idle attached pi serve sessions")
    parser.add_argument("--sizes", default="1,10,100", help="session sizes in MB")
    parser.add_argument("--turns", type=int, default=2000, help="turns of the long-lived session")
    parser.add_argument("--reference", default=DEFAULT_REFERENCE if os.path.exists(DEFAULT_REFERENCE) else None,
                        help="path to the reference pi's dist/cli.js, run with --node (default: the one "
                             "scripts/install-reference.sh installs, when it is there)")
    parser.add_argument("--no-reference", action="store_true", help="measure pi-rpc alone")
    parser.add_argument("--node", default=DEFAULT_NODE if os.path.exists(DEFAULT_NODE) else "node",
                        help="node binary for --reference and the extension host")
    parser.add_argument("--pi", default=os.path.join(ROOT, "target", "release", "pi"), help="pi-rpc binary")
    parser.add_argument("--fake", help="fake model server binary (default: the release build's)")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if args.fake:
        global FAKE
        FAKE = os.path.abspath(args.fake)
    only = set(args.only.split(","))
    # The agents run in temporary directories: relative paths would not resolve there.
    args.pi = os.path.abspath(args.pi)
    args.reference = None if args.no_reference or not args.reference else os.path.abspath(args.reference)
    if os.sep in args.node:
        args.node = os.path.abspath(args.node)
    if not args.no_build:
        build()
    impls = [Impl("pi-rpc", [args.pi])]
    if args.reference:
        impls.append(Impl("pi 1.6.0", [args.node, args.reference], ["--offline"]))
    loads = {}

    class Recorder(dict):
        """An implementation's figures; each new one is stamped with the load average."""

        def __init__(self, name):
            super().__init__()
            self.name = name

        def update(self, figures):
            load = os.getloadavg()[0]
            for key in figures:
                loads[(self.name, key)] = load
            super().update(figures)

    results = {impl.name: Recorder(impl.name) for impl in impls}
    print(f"machine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}; binary {os.path.getsize(args.pi) / MIB:.1f} "
          f"MiB; each figure: median (min–max) of {args.repeat} runs")
    if "start" in only:
        for impl in impls:
            runs = args.runs if impl is impls[0] else max(3, args.runs // 4)
            results[impl.name].update(measure_start(impl, runs))
        servers = mcp_servers()
        if servers is not None:
            for impl in impls:
                runs = args.runs if impl is impls[0] else max(3, args.runs // 4)
                results[impl.name].update(measure_start(impl, runs, f"{impl.name}, 3 MCP servers configured",
                                                        servers, prefix="mcp"))
    if "relay" in only:
        for deltas in (20_000, 100_000):
            for impl in impls:
                results[impl.name].update(measure_relay(impl, deltas, args.repeat))
    if "sessions" in only:
        with tempfile.TemporaryDirectory() as workdir:
            for size in [float(s) for s in args.sizes.split(",")]:
                path = os.path.join(workdir, f"session-{size:g}mb.jsonl")
                with open(path, "w", encoding="utf-8", newline="\n") as f:
                    entries = session_gen.generate(f, int(size * MIB), seed=1, cwd=workdir)
                label = f"{size:g} MB session ({entries:,} entries)"
                for impl in impls:
                    r = measure_session(impl, path, args.repeat, workdir, label)
                    results[impl.name].update({f"s{size:g}_{k}": v for k, v in r.items()})
                os.remove(path)
    if "spaced" in only:
        with tempfile.TemporaryDirectory() as workdir:
            path = os.path.join(workdir, "session-spaced.jsonl")
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                entries = session_gen.generate(f, 100 * MIB, seed=1, cwd=workdir, spaced=True)
            for impl in impls:
                r = measure_session(impl, path, args.repeat, workdir,
                                    f"100 MB session with JSON spacing ({entries:,} entries)")
                results[impl.name].update({f"spaced_{k}": v for k, v in r.items()})
    if "long" in only:
        for impl in impls:
            results[impl.name].update(measure_long(impl, args.turns))
    if "bursts" in only:
        for count in (10_000, 100_000):
            for impl in impls:
                results[impl.name].update(measure_burst(impl, count, args.repeat if count <= 10_000 else 1))
    if "extension" in only:
        node = args.node if args.node != "node" else os.environ.get("PI_RPC_NODE", "node")
        for impl in impls:
            results[impl.name].update(measure_extension(impl, node, max(3, args.runs // 4)))
    if "settled" in only:
        node = args.node if args.node != "node" else os.environ.get("PI_RPC_NODE", "node")
        for impl in impls:
            results[impl.name].update(measure_settled(impl, node, args.repeat))
    if "serve" in only:
        results["pi-rpc"].update(measure_serve(args.pi, args.idle))
        if "reference_idle_kib" in results["pi-rpc"] and "pi 1.6.0" in results:
            results["pi 1.6.0"].update({"serve_idle_kib": results["pi-rpc"]["reference_idle_kib"]})
    if len(impls) > 1:
        closing_table(results[impls[0].name], results[impls[1].name], loads)
    else:
        closing_table(results[impls[0].name], {}, loads)


if __name__ == "__main__":
    sys.exit(main())
