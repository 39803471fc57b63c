#!/usr/bin/env python3
"""Clients of a `pi serve --cluster` (native dialect, Python `websockets`),
one scenario per run; tests/e2e/serve_cluster.rs starts nats-server and the
workers and runs each scenario, and fails when this exits non-zero.

Usage: cluster_client.py SCENARIO ARG...   (PI_TOKEN_FILE: the servers' token)

Scenarios:
  relay URL_A URL_B         a session created on worker A, used from worker B
                            (commands relayed to A): two clients on the two
                            workers see the same events with the same seq
  spread N URL...           N sessions created without a key, round-robin over
                            the URLs, then each resumed by id on the next URL:
                            history and lastSeq intact everywhere
  killed URL_A URL_B PID_A [URL_RESUME]
                            kill -9 of the owner A mid-stream: a client on B
                            stays and is told the turn was interrupted; a
                            client on A resumes on URL_RESUME (B) with
                            afterSeq and gets every event exactly once, then
                            the interruption, then a new prompt works; prints
                            the session id
  drain N PID URL_V URL...  N sessions on worker V, each streaming a turn to a
                            client on another worker; SIGTERM to V: every turn
                            completes without a gap, and the sessions go on
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


def connect(url):
    """A WebSocket connection, with the token of PI_TOKEN_FILE when set."""
    token_file = os.environ.get("PI_TOKEN_FILE")
    if not token_file:
        return websockets.connect(url)
    with open(token_file) as f:
        token = f.read().strip()
    return websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"})


async def settled(ws):
    return await until(ws, lambda m: m.get("type") == "agent_settled")


async def prompt_to_settled(ws, id, message):
    _, before = await call(ws, id, "prompt", message=message)
    return before + await settled(ws)


def numbered(events):
    return [(e["seq"], e["type"]) for e in events if "seq" in e]


async def relay(url_a, url_b):
    async with connect(url_a) as a:
        state, _ = await call(a, "s", "get_state")
        sid = state["data"]["sessionId"]
        await prompt_to_settled(a, "p", "remember the lighthouse")
        async with connect(f"{url_b}?session={sid}") as b:
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
            check(state["data"]["messageCount"] == 7, f"messages: {state['data']['messageCount']}")
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
        async with connect(url) as ws:
            state, _ = await call(ws, "s", "get_state")
            sid = state["data"]["sessionId"]
            events = await prompt_to_end(ws, "p", f"note {i}")
            made.append((sid, i, max(seqs(events))))
    for sid, i, last in made:
        url = urls[(i + 1) % len(urls)]
        async with connect(f"{url}?session={sid}&afterSeq={last}") as ws:
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


async def killed(url_a, url_b, pid_a, url_resume=None):
    url_resume = url_resume or url_b
    x = await connect(url_a)
    state, _ = await call(x, "s", "get_state")
    sid = state["data"]["sessionId"]
    y = await connect(f"{url_b}?session={sid}")
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
    async with connect(f"{url_resume}?session={sid}&afterSeq={last}") as z:
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
    async with connect(f"{url}?session={sid}") as ws:
        state, _ = await call(ws, "s", "get_state")
        check(state["data"]["sessionId"] == sid, f"attached to {state['data']['sessionId']}")
        messages, _ = await call(ws, "m", "get_messages")
        check(expect in json.dumps(messages["data"]["messages"]), f"history lost: no {expect!r}")
        events = await prompt_to_end(ws, "p", "once more")
        ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
        check(ends and ends[-1]["message"].get("stopReason") == "stop", f"prompt after the restart: {ends}")
    print("resume ok")


def final_text(events):
    ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
    check(ends, "no assistant message")
    message = ends[-1]["message"]
    check(message.get("stopReason") == "stop", f"the turn did not complete: {message.get('errorMessage')}")
    return "".join(p.get("text", "") for p in message["content"])


async def drain(n, pid, url_v, *others):
    n = int(n)
    sids = []
    for _ in range(n):
        async with connect(url_v) as ws:
            state, _ = await call(ws, "s", "get_state")
            sids.append(state["data"]["sessionId"])
    clients = [await connect(f"{others[i % len(others)]}?session={sid}") for i, sid in enumerate(sids)]
    for c in clients:
        await call(c, "s", "get_state")
    for c in clients:
        await c.send(json.dumps({"id": "p", "type": "prompt", "message": "stream slowly"}))

    def first_delta(m):
        return m.get("type") == "message_update" and m["assistantMessageEvent"].get("type") == "text_delta"

    firsts = await asyncio.gather(*(until(c, first_delta) for c in clients))
    os.kill(int(pid), signal.SIGTERM)
    started = time.monotonic()
    rests = await asyncio.gather(*(until(c, lambda m: m.get("type") == "agent_settled", 90) for c in clients))
    took = time.monotonic() - started
    for sid, first, rest in zip(sids, firsts, rests):
        events = first + rest
        numbers = seqs(events)
        increasing(numbers, f"{sid} across the drain")
        text = final_text(events)
        check(deltas(events) == text, f"{sid}: missed or doubled deltas:\n{deltas(events)!r}\n{text!r}")
        check(not interruption_of(events), f"{sid}: interrupted by a drain")
    # The sessions go on, now on the other workers.
    for c in clients:
        events = await prompt_to_end(c, "q", "after the drain")
        final_text(events)
        await c.close()
    print(f"drain ok: {n} turns completed, the last {took:.1f}s after SIGTERM")


SCENARIOS = {"drain": drain, "relay": relay, "spread": spread, "killed": killed, "resume": resume}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in SCENARIOS:
        fail(f"usage: {sys.argv[0]} {{{'|'.join(SCENARIOS)}}} ARG...")
    asyncio.run(SCENARIOS[sys.argv[1]](*sys.argv[2:]))
