#!/usr/bin/env python3
"""Clients of a `pi serve --cluster` (native dialect, Python `websockets`),
one scenario per run; tests/e2e/serve_cluster.rs starts nats-server and the
workers and runs each scenario, and fails when this exits non-zero.

Usage: cluster_client.py SCENARIO ARG...

Scenarios:
  relay URL_A URL_B         a session created on worker A, used from worker B
                            (commands relayed to A): two clients on the two
                            workers see the same events with the same seq
  spread N URL...           N sessions created without a key, round-robin over
                            the URLs, then each resumed by id on the next URL:
                            history and lastSeq intact everywhere
  killed URL_A URL_B PID_A  kill -9 of the owner A mid-stream: a client on B
                            stays and is told the turn was interrupted; a
                            client on A resumes on B with afterSeq and gets
                            every event exactly once, then the interruption,
                            then a new prompt works; prints the session id
  resume URL ID TEXT        session ID (any worker) answers, TEXT is in its
                            history, and a prompt works
"""

import asyncio
import json
import os
import signal
import sys
import time

import websockets
from websockets.exceptions import ConnectionClosed

from native_client import call, check, deltas, fail, increasing, prompt_to_end, recv, seqs, until

INTERRUPTED = "interrupted by the loss of its worker"


async def settled(ws):
    return await until(ws, lambda m: m.get("type") == "agent_settled")


async def prompt_to_settled(ws, id, message):
    _, before = await call(ws, id, "prompt", message=message)
    return before + await settled(ws)


def numbered(events):
    return [(e["seq"], e["type"]) for e in events if "seq" in e]


async def relay(url_a, url_b):
    async with websockets.connect(url_a) as a:
        state, _ = await call(a, "s", "get_state")
        sid = state["data"]["sessionId"]
        await prompt_to_settled(a, "p", "remember the lighthouse")
        async with websockets.connect(f"{url_b}?session={sid}") as b:
            state, _ = await call(b, "s", "get_state")
            check(state["data"]["sessionId"] == sid, f"B attached to {state['data']['sessionId']}")
            messages, _ = await call(b, "m", "get_messages")
            check("remember the lighthouse" in json.dumps(messages["data"]["messages"]), "history lost on B")
            # A prompt through B: both clients see the same events, numbered alike.
            eb = await prompt_to_settled(b, "p", "hello through B")
            ea = await settled(a)
            check("hello through B" in deltas(eb), f"B saw: {deltas(eb)!r}")
            check(numbered(ea) == numbered(eb), f"A and B saw different events:\n{numbered(ea)}\n{numbered(eb)}")
            increasing(seqs(eb), "through B")
            # And the other way round.
            ea = await prompt_to_settled(a, "q", "hello from A")
            eb = await settled(b)
            check(numbered(ea) == numbered(eb), "A's turn seen differently on B")
            state, _ = await call(b, "t", "get_state")
            check(state["data"]["messageCount"] == 6, f"messages: {state['data']['messageCount']}")
            # An error from the owner comes back as an error reply.
            await b.send(json.dumps({"id": "x", "type": "switch_session", "sessionPath": "no-such-session"}))
            err = (await until(b, lambda m: m.get("id") == "x"))[-1]
            check(not err["success"] and "no-such-session" in err["error"], f"unknown session: {err}")
            state, _ = await call(b, "u", "get_state")
            check(state["data"]["sessionId"] == sid, "the failed switch moved B")
    print(f"relay ok: {sid}")


async def spread(n, *urls):
    n = int(n)
    made = []
    for i in range(n):
        url = urls[i % len(urls)]
        async with websockets.connect(url) as ws:
            state, _ = await call(ws, "s", "get_state")
            sid = state["data"]["sessionId"]
            events = await prompt_to_end(ws, "p", f"note {i}")
            made.append((sid, i, max(seqs(events))))
    for sid, i, last in made:
        url = urls[(i + 1) % len(urls)]
        async with websockets.connect(f"{url}?session={sid}&afterSeq={last}") as ws:
            reply = await recv(ws)
            check(reply.get("type") == "response" and reply.get("success"), f"resume {sid}: {reply}")
            check(reply["data"]["sessionId"] == sid, f"resumed {reply['data']['sessionId']}, not {sid}")
            check(reply["data"]["lastSeq"] >= last and not reply["data"]["gap"], f"resume {sid}: {reply}")
            messages, _ = await call(ws, "m", "get_messages")
            check(f"note {i}" in json.dumps(messages["data"]["messages"]), f"{sid}: history lost")
    print(f"spread ok: {n} sessions over {len(urls)} workers")


async def collect_until_closed(ws, into):
    try:
        while True:
            into.append(await recv(ws))
    except ConnectionClosed:
        return


def interruption_of(events):
    ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
    return [e for e in ends if e["message"].get("stopReason") == "error"
            and INTERRUPTED in (e["message"].get("errorMessage") or "")]


async def killed(url_a, url_b, pid_a):
    x = await websockets.connect(url_a)
    state, _ = await call(x, "s", "get_state")
    sid = state["data"]["sessionId"]
    y = await websockets.connect(f"{url_b}?session={sid}")
    await call(y, "s", "get_state")
    _, before = await call(x, "p", "prompt", message="stream slowly")
    seen_x = before + await until(x, lambda m: m.get("type") == "message_update"
                                  and m["assistantMessageEvent"].get("type") == "text_delta"
                                  and m["assistantMessageEvent"].get("delta", "").startswith("w5 "))
    os.kill(int(pid_a), signal.SIGKILL)
    killed_at = time.monotonic()
    await collect_until_closed(x, seen_x)
    # The client on B stays: the turn is reported interrupted once B took the session over.
    seen_y = await until(y, lambda m: m.get("type") == "agent_end", timeout=60)
    took = time.monotonic() - killed_at
    check(interruption_of(seen_y), f"B's client was not told: {[m.get('type') for m in seen_y][-8:]}")
    increasing(seqs(seen_y), "B's client across the takeover")
    # The client of the dead worker resumes on B from its last event.
    last = max(seqs(seen_x))
    async with websockets.connect(f"{url_b}?session={sid}&afterSeq={last}") as z:
        reply = await recv(z)
        check(reply.get("type") == "response" and reply.get("success"), f"resume: {reply}")
        rest = await until(z, lambda m: m.get("type") == "agent_end")
        numbers = seqs(seen_x) + seqs(rest)
        increasing(numbers, "x across the kill")
        check(len(numbers) == len(set(numbers)), "an event came twice")
        check(interruption_of(rest), f"x was not told: {[m.get('type') for m in rest]}")
        # Every delta stored before the kill came once, in order.
        got = deltas(seen_x) + deltas(rest)
        words = got.split()
        check(words == [f"w{i}" for i in range(len(words))], f"missed or doubled deltas: {got!r}")
        # The conversation goes on.
        events = await prompt_to_end(z, "n", "after the loss")
        ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
        check(ends and ends[-1]["message"].get("stopReason") == "stop", f"new prompt: {ends}")
        check(min(seqs(events)) > max(numbers), "numbers went back")
    await y.close()
    print(f"killed ok: {sid} interrupted reported {took:.1f}s after the kill, {len(words)} deltas kept")
    print(f"SESSION {sid}")


async def resume(url, sid, expect):
    async with websockets.connect(f"{url}?session={sid}") as ws:
        state, _ = await call(ws, "s", "get_state")
        check(state["data"]["sessionId"] == sid, f"attached to {state['data']['sessionId']}")
        messages, _ = await call(ws, "m", "get_messages")
        check(expect in json.dumps(messages["data"]["messages"]), f"history lost: no {expect!r}")
        events = await prompt_to_end(ws, "p", "once more")
        ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
        check(ends and ends[-1]["message"].get("stopReason") == "stop", f"prompt after the restart: {ends}")
    print("resume ok")


SCENARIOS = {"relay": relay, "spread": spread, "killed": killed, "resume": resume}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in SCENARIOS:
        fail(f"usage: {sys.argv[0]} {{{'|'.join(SCENARIOS)}}} ARG...")
    asyncio.run(SCENARIOS[sys.argv[1]](*sys.argv[2:]))
