#!/usr/bin/env python3
"""`pi serve`'s listener and WebSocket protocol faults, driven by a Python
client (the `websockets` library and raw sockets); tests/e2e/serve_faults.rs
starts the server and runs each scenario, and fails when this exits non-zero.

Usage: faults_client.py SCENARIO URL [ARG...]

Scenarios:
  connect_resume URL       ?session=ID&afterSeq=N answered at connect time,
                           without ?protocol= (native) and with ?protocol=jsonrpc
  init_then_new URL        JSON-RPC initialize then newSession at once: both
                           answered, in order, with the initialized notification
  bad_utf8 URL             a text frame with invalid UTF-8: the earlier answer,
                           an error reply, then close 1007
  binary_order URL         JSON-RPC: a binary frame after five requests: its
                           error (-32700) comes after their answers
  half_open URL PID        half a request's headers, then SIGTERM: the server
                           exits at once
  silent URL N LIMIT       N silent connections count against --max-connections
                           (LIMIT): a WebSocket is refused with 503 until the
                           handshake deadline drops them, then served
  many URL N               N sessions, each with its own connection, all served
  hold_then_prompt URL ID GO
                           attach to session ID, wait for the file GO, prompt
"""

import asyncio
import json
import os
import resource
import signal
import socket
import sys
import time
import urllib.parse

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from native_client import readyz

TIMEOUT = 30


def fail(text):
    raise AssertionError(text)


def check(cond, text):
    if not cond:
        fail(text)


async def recv(ws, timeout=TIMEOUT):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def until(ws, pred, timeout=TIMEOUT):
    seen = []
    while True:
        msg = await recv(ws, timeout)
        seen.append(msg)
        if pred(msg):
            return seen


def host_port(url):
    parsed = urllib.parse.urlparse(url)
    return parsed.hostname, parsed.port


async def connect_resume(url):
    session = f"connect-resume-{os.getpid()}"
    async with websockets.connect(f"{url}?session={session}") as ws:
        hello = await recv(ws)
        check(hello.get("type") == "response" and "id" not in hello, f"connect-time answer: {hello}")
        check(hello.get("command") == "switch_session" and hello.get("success"), f"{hello}")
        first = hello["data"]
        check(first["sessionId"] == session and first["replayed"] == 0, f"{first}")
        await ws.send(json.dumps({"id": "p", "type": "prompt", "message": "hello"}))
        seen = await until(ws, lambda m: m.get("type") == "agent_end")
        numbered = [m["seq"] for m in seen if "seq" in m]
        check(len(numbered) >= 3, f"events: {seen}")
    after = numbered[1]
    expected = [n for n in numbered if n > after]
    # Nothing is sent: the answer and the missed events come at once.
    async with websockets.connect(f"{url}?session={session}&afterSeq={after}") as ws:
        hello = await recv(ws, 10)
        check(hello.get("command") == "switch_session", f"connect-time answer: {hello}")
        data = hello["data"]
        check(data["lastSeq"] >= numbered[-1], f"lastSeq {data} vs {numbered}")
        check(data["replayed"] >= len(expected) and data["gap"] is False, f"{data}")
        # `replayed` counts events this dialect does not show too.
        replay = [m["seq"] for m in await until(ws, lambda m: m.get("seq") == expected[-1], 10)]
        check(replay == expected, f"replayed {replay}, expected {expected}")
    async with websockets.connect(f"{url}?session={session}&afterSeq={after}&protocol=jsonrpc") as ws:
        hello = await recv(ws, 10)
        check(hello.get("jsonrpc") == "2.0" and hello.get("id") is None and "result" in hello, f"{hello}")
        check(hello["result"]["lastSeq"] >= numbered[-1], f"{hello}")
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "getState"}))
        reply = await until(ws, lambda m: m.get("id") == 1)
        check(reply[-1]["result"]["sessionId"] == session, f"{reply[-1]}")
    # Without ?protocol=, a JSON-RPC first message: answered again in JSON-RPC, with the replay.
    async with websockets.connect(f"{url}?session={session}&afterSeq={after}") as ws:
        native = await recv(ws, 10)
        check(native.get("command") == "switch_session", f"{native}")
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "getState"}))
        seen = await until(ws, lambda m: m.get("jsonrpc") == "2.0" and m.get("id") == 7)
        rpc = [m for m in seen if m.get("jsonrpc") == "2.0"]
        check(rpc[0].get("id") is None and rpc[0]["result"]["lastSeq"] >= numbered[-1], f"{rpc[0]}")
        replay = [m["params"]["seq"] for m in rpc if "seq" in m.get("params", {})]
        # The dialects show different events: what is replayed is numbered after afterSeq, in order.
        ok = len(replay) >= 3 and all(n > after for n in replay) and replay == sorted(set(replay))
        check(ok, f"JSON-RPC replay {replay}, after {after}")
    print("connect_resume ok")


async def init_then_new(url):
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 51, "method": "initialize", "params": {}}))
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 68, "method": "newSession", "params": {}}))
        seen = await until(ws, lambda m: m.get("id") == 68)
        ids = [m.get("id") for m in seen if "method" not in m]
        check(ids == [51, 68], f"answers in order 51, 68: {seen}")
        methods = [m.get("method") for m in seen if "method" in m]
        check("initialized" in methods, f"no initialized notification: {seen}")
        second = seen[-1]
        check("result" in second and "sessionId" in second["result"], f"{second}")
        # The new session is the attached one.
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 69, "method": "getState"}))
        state = (await until(ws, lambda m: m.get("id") == 69))[-1]
        check(state["result"]["sessionId"] == second["result"]["sessionId"], f"{state} vs {second}")
    print("init_then_new ok")


async def bad_utf8(url):
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"id": "a", "type": "get_state"}))
        await ws.send(b'{"id":"b","type":"get_st\xffate"}', text=True)
        first = await recv(ws)
        check(first.get("id") == "a" and first.get("success"), f"first answer: {first}")
        error = await recv(ws)
        check(error.get("type") == "response" and error.get("success") is False, f"error reply: {error}")
        check("UTF-8" in error.get("error", ""), f"{error}")
        try:
            extra = await asyncio.wait_for(ws.recv(), 10)
            fail(f"expected the close, got {extra}")
        except ConnectionClosed as closed:
            check(closed.rcvd is not None and closed.rcvd.code == 1007, f"close: {closed.rcvd}")
    print("bad_utf8 ok")


async def binary_order(url):
    async with websockets.connect(url) as ws:
        rpc = lambda id, method: json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})
        await ws.send(rpc(1, "initialize"))
        await until(ws, lambda m: m.get("id") == 1)
        for n in range(2, 7):
            await ws.send(rpc(n, "getMessages" if n % 2 else "getState"))
        await ws.send(b'{"jsonrpc":"2.0","id":7,"method":"getState"}')
        await ws.send(rpc(8, "getState"))
        seen = await until(ws, lambda m: m.get("id") == 8, 20)
        answers = [m.get("id") for m in seen if "method" not in m]
        check(answers == [2, 3, 4, 5, 6, None, 8], f"the answers, the binary frame's error, the next: {answers}")
        error = next(m for m in seen if "method" not in m and m.get("id") is None)
        check(error["error"]["code"] == -32700, f"{error}")
    print("binary_order ok")


async def half_open(url, pid):
    host, port = host_port(url)
    raw = socket.create_connection((host, port))
    raw.sendall(b"GET /rpc HTTP/1.1\r\nHost: x\r\nUpgrade: websock")
    await asyncio.sleep(0.3)
    os.kill(int(pid), signal.SIGTERM)
    started = time.monotonic()
    # The test then waits for the server to exit; keep the socket open meanwhile.
    await asyncio.sleep(8)
    raw.close()
    print(f"half_open ok {time.monotonic() - started:.1f}")


async def silent(url, count, limit):
    count, limit = int(count), int(limit)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, port = host_port(url)
    sockets = [socket.create_connection((host, port)) for _ in range(count)]
    await asyncio.sleep(0.5)
    status, ready = readyz(url)
    check(status == 503 and ready["connections"] >= limit, f"readyz with {count} silent connections: {status} {ready}")
    try:
        async with websockets.connect(url, open_timeout=10):
            fail("a WebSocket was accepted over the limit")
    except InvalidStatus as e:
        check(e.response.status_code == 503, f"{e.response.status_code}")
    # The handshake deadline drops them.
    deadline = time.monotonic() + 30
    while True:
        status, ready = readyz(url)
        if status == 200 and ready["connections"] <= 1:
            break
        check(time.monotonic() < deadline, f"silent connections not dropped: {ready}")
        await asyncio.sleep(0.5)
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"id": "s", "type": "get_state"}))
        reply = (await until(ws, lambda m: m.get("id") == "s"))[-1]
        check(reply["success"], f"{reply}")
    for s in sockets:
        s.close()
    print("silent ok")


async def many(url, count):
    count = int(count)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    conns = []
    try:
        for n in range(count):
            ws = await websockets.connect(f"{url}?session=many-{n}", open_timeout=20)
            conns.append(ws)
            hello = await recv(ws)
            check(hello.get("success"), f"session {n}: {hello}")
        for n, ws in enumerate(conns):
            await ws.send(json.dumps({"id": n, "type": "get_state"}))
        for n, ws in enumerate(conns):
            reply = (await until(ws, lambda m: m.get("id") == n))[-1]
            check(reply["success"] and reply["data"]["sessionId"] == f"many-{n}", f"{reply}")
    finally:
        for ws in conns:
            await ws.close()
    print(f"many ok {count}")


async def hold_then_prompt(url, session, go_file):
    """Attach, wait for GO_FILE, then prompt: print every message until the run ends (or 20 s)."""
    async with websockets.connect(f"{url}?session={session}") as ws:
        await recv(ws)
        print("attached", flush=True)
        while not os.path.exists(go_file):
            await asyncio.sleep(0.05)
        try:
            # The stale owner may already have let go of the session (closing this connection).
            await ws.send(json.dumps({"id": "late", "type": "prompt", "message": "written by a stale owner"}))
            await until(ws, lambda m: m.get("type") == "agent_end", 20)
        except (asyncio.TimeoutError, ConnectionClosed):
            pass
    print("hold_then_prompt done")


SCENARIOS = {
    "connect_resume": connect_resume,
    "init_then_new": init_then_new,
    "bad_utf8": bad_utf8,
    "binary_order": binary_order,
    "half_open": half_open,
    "silent": silent,
    "many": many,
    "hold_then_prompt": hold_then_prompt,
}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    asyncio.run(SCENARIOS[sys.argv[1]](*sys.argv[2:]))


if __name__ == "__main__":
    main()
