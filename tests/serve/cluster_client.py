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
                            completes without a gap, and the sessions go on;
                            meanwhile V's /readyz says 503 (draining) and a
                            new WebSocket to V is refused with 503;
                            two clients on V itself see their turn to its end,
                            are closed with 1012 (service restart) and resume
                            on another worker with afterSeq, missing nothing
  interrupted_dialects URL_A URL_B PID_A
                            a session owned by A, an ACP client on B (its
                            session/prompt relayed to A) and a JSON-RPC client
                            on B; kill -9 of A mid-stream: the pending
                            session/prompt is answered with the interruption
                            as its error, the JSON-RPC client gets an `error`
                            notification saying so; both go on on B
  resume URL ID TEXT        session ID (any worker) answers, TEXT is in its
                            history, and a prompt works
  dialogs URL_A URL_B        a session owned by A with a client on each worker
                            (demo extension): every dialog reaches both with
                            the same id and seq, the first answer wins from
                            either worker, a client attaching to B mid-dialog
                            gets it too
  approvals URL_A URL_B      tool approvals (--tool-approval) of a session owned
                            by A reach a client on B too; the first answer
                            wins from either worker (allowed from B, blocked
                            from A)
  acp URL_A URL_B            ACP: a session made on A is loaded (history
                            replayed) and resumed from B, prompts from either
                            worker stream to both, session/list on B names it
  takeover_replay URL_A URL_B URL_C PID_A
                            kill -9 of an idle owner A; B takes the session
                            over (numbering nothing yet); a full replay
                            through C's mirror of B has every event, no gap
  retention URL_A URL_B PID_A KEEP
                            workers keeping KEEP events a session
                            (--event-retention): kill -9 of an idle owner A,
                            B takes the session over; a full replay on B
                            (from the stream) says gap: true and sends the
                            last events only, at most KEEP
  paused URL_A URL_B PID_A    the owner A paused (SIGSTOP) mid-stream past its
                            lease: B takes the session over and its client is
                            told the turn was interrupted; A resumed (SIGCONT)
                            finds its lease gone, and its client, still
                            connected, moves to B: it gets the interruption
                            once, no event twice, then a new prompt works
  touch URL ID               session ID created (?session=) and left without a
                            word written: the session file does not exist
  found URL ID               a new connection switches to session ID by id
                            (switch_session) and is attached to it
  nats_restart URL_A URL_B NATS_PID FLAG
                            kill -9 of nats-server mid-stream (the test starts
                            it again and then writes FLAG): the owner's client
                            and a client on B get every event once, a request
                            sent meanwhile is answered (or refused) once, a
                            full replay has no gap, and prompts work after
"""

import asyncio
import json
import os
import signal
import sys
import time

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from native_client import (acp_call, acp_text, call, check, deltas, fail, http_base, increasing, prompt_to_end, readyz,
                           recv, seqs, until)

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


async def collect_until_closed(ws, into, *timeout):
    try:
        while True:
            into.append(await recv(ws, *timeout))
    except ConnectionClosed:
        return


def interruption_of(events):
    ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
    return [e for e in ends if e["message"].get("stopReason") == "error"
            and INTERRUPTED in (e["message"].get("errorMessage") or "")]


async def streaming_on_a(url_a, url_b):
    """A session of worker A streaming slowly, its client x on A past the
    sixth delta and a client y on B: (x, y, session id, what x saw)."""
    x = await connect(url_a)
    state, _ = await call(x, "s", "get_state")
    sid = state["data"]["sessionId"]
    y = await connect(f"{url_b}?session={sid}")
    await call(y, "s", "get_state")
    _, before = await call(x, "p", "prompt", message="stream slowly")
    seen_x = before + await until(x, lambda m: m.get("type") == "message_update"
                                  and m["assistantMessageEvent"].get("type") == "text_delta"
                                  and m["assistantMessageEvent"].get("delta", "").startswith("w5 "))
    return x, y, sid, seen_x


async def killed(url_a, url_b, pid_a, url_resume=None):
    url_resume = url_resume or url_b
    x, y, sid, seen_x = await streaming_on_a(url_a, url_b)
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


async def interrupted_dialects(url_a, url_b, pid_a):
    init = {"protocolVersion": 1, "clientCapabilities": {}}
    cwd = os.getcwd()
    x = await connect(url_a)
    state, _ = await call(x, "s", "get_state")
    sid = state["data"]["sessionId"]
    j = await connect(f"{url_b}?session={sid}&protocol=jsonrpc")
    hello = await recv(j)
    check(hello.get("result", {}).get("sessionId") == sid, f"JSON-RPC attach on B: {hello}")
    a = await connect(f"{url_b}?protocol=acp")
    await acp_call(a, 0, "initialize", init)
    await acp_call(a, 1, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "stream slowly"}]}
    await a.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}))
    seen_a = await until(a, lambda m: acp_chunk(m) and m["params"]["update"]["content"].get("text", "").startswith("w5 "))
    seen_j = await until(j, lambda m: m.get("method") == "assistantMessage" and m["params"].get("type") == "delta"
                         and m["params"].get("delta", "").startswith("w5 "))
    os.kill(int(pid_a), signal.SIGKILL)
    # ACP: the pending session/prompt is answered with the interruption as its error.
    seen_a += await until(a, lambda m: m.get("id") == 2, 60)
    answer = seen_a[-1]
    check("error" in answer and INTERRUPTED in json.dumps(answer["error"]), f"ACP's session/prompt: {answer}")
    check("w5 " in acp_text(seen_a, sid, "agent_message_chunk"), "ACP saw no delta before the kill")
    # JSON-RPC: an `error` notification saying so (after the turn's messages).
    seen_j += await until(j, lambda m: m.get("method") == "error", 60)
    error = seen_j[-1]["params"]
    check(INTERRUPTED in error["message"], f"JSON-RPC's error notification: {error}")
    numbers = [m["params"]["seq"] for m in seen_j if "seq" in m.get("params", {})]
    increasing(numbers, "the JSON-RPC client across the takeover")
    # Both go on with the new owner B.
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "after the loss"}]}
    result, _ = await acp_call(a, 3, "session/prompt", prompt)
    check(result["stopReason"] == "end_turn", f"ACP prompt after the loss: {result}")
    await j.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "getState"}))
    reply = (await until(j, lambda m: m.get("id") == 5))[-1]
    check(reply["result"]["sessionId"] == sid, f"JSON-RPC getState: {reply}")
    for ws in (a, j):
        await ws.close()
    print(f"interrupted_dialects ok: {sid}")


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


async def paused(url_a, url_b, pid_a):
    x, y, sid, seen_x = await streaming_on_a(url_a, url_b)
    os.kill(int(pid_a), signal.SIGSTOP)
    try:
        seen_y = await until(y, lambda m: m.get("type") == "agent_end", timeout=60)
    finally:
        os.kill(int(pid_a), signal.SIGCONT)
    check(interruption_of(seen_y), f"B's client was not told: {[m.get('type') for m in seen_y][-8:]}")
    # A's client stays connected and is moved to B: told the interruption, nothing twice.
    rest = await until(x, lambda m: m.get("type") == "agent_end", timeout=60)
    check(interruption_of(rest), f"A's client was not told: {[m.get('type') for m in rest][-8:]}")
    numbers = seqs(seen_x) + seqs(rest)
    increasing(numbers, "A's client across the handover")
    words = (deltas(seen_x) + deltas(rest)).split()
    check(words == [f"w{i}" for i in range(len(words))], f"missed or doubled deltas: {words}")
    # The conversation goes on from A's client, now served through B.
    events = await prompt_to_end(x, "n", "after the handover")
    ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
    check(ends and ends[-1]["message"].get("stopReason") == "stop", f"new prompt: {ends}")
    check(min(seqs(events)) > max(numbers), "numbers went back")
    seen_y = await until(y, lambda m: m.get("type") == "agent_end")
    check("after the handover" in json.dumps(seen_y), "B's client did not see A's client's prompt")
    await x.close()
    await y.close()
    print(f"paused ok: {sid}, {len(words)} deltas before the pause")


async def touch(url, sid):
    async with connect(f"{url}?session={sid}") as ws:
        state, _ = await call(ws, "s", "get_state")
        check(state["data"]["sessionId"] == sid, f"attached to {state['data']['sessionId']}")
        check(state["data"]["messageCount"] == 0, f"messages: {state['data']['messageCount']}")
    print("touch ok")


async def found(url, sid):
    async with connect(url) as ws:
        await call(ws, "w", "switch_session", sessionPath=sid)
        state, _ = await call(ws, "s", "get_state")
        check(state["data"]["sessionId"] == sid, f"switched to {state['data']['sessionId']}, not {sid}")
    print("found ok")


def final_text(events):
    ends = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
    check(ends, "no assistant message")
    message = ends[-1]["message"]
    check(message.get("stopReason") == "stop", f"the turn did not complete: {message.get('errorMessage')}")
    return "".join(p.get("text", "") for p in message["content"])


async def refused_while_draining(url):
    """While its turns run on after SIGTERM, the draining worker says 503
    (draining) on /readyz and refuses a new WebSocket with 503."""
    deadline = time.monotonic() + 30
    while True:
        try:
            status, body = await asyncio.to_thread(readyz, url)
        except OSError as e:
            fail(f"the worker was gone before /readyz said it drains: {e}")
        if status == 503:
            check(body.get("draining") is True and body.get("ready") is False, f"/readyz while draining: {body}")
            break
        check(time.monotonic() < deadline, f"/readyz never said 503 after SIGTERM: {status} {body}")
        await asyncio.sleep(0.05)
    try:
        async with connect(url):
            fail("a new WebSocket was accepted by the draining worker")
    except InvalidStatus as e:
        check(e.response.status_code == 503, f"a new WebSocket while draining: {e.response.status_code}")


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
    # Two sessions also have a client on the draining worker itself.
    local = [await connect(f"{url_v}?session={sid}") for sid in sids[:2]]
    for c in local:
        await call(c, "s", "get_state")
    for c in clients:
        await c.send(json.dumps({"id": "p", "type": "prompt", "message": "stream slowly"}))

    def first_delta(m):
        return m.get("type") == "message_update" and m["assistantMessageEvent"].get("type") == "text_delta"

    firsts = await asyncio.gather(*(until(c, first_delta) for c in clients))
    seen_local = [[] for _ in local]
    os.kill(int(pid), signal.SIGTERM)
    started = time.monotonic()
    rests, _, _ = await asyncio.gather(
        asyncio.gather(*(until(c, lambda m: m.get("type") == "agent_settled", 90) for c in clients)),
        asyncio.gather(*(collect_until_closed(c, into, 90) for c, into in zip(local, seen_local))),
        refused_while_draining(url_v))
    took = time.monotonic() - started
    for sid, c, seen in zip(sids, local, seen_local):
        check(c.close_code == 1012, f"{sid}: the draining worker's client was closed with {c.close_code}, not 1012")
        last = max(seqs(seen), default=0)
        async with connect(f"{others[0]}?session={sid}&afterSeq={last}") as z:
            reply = await recv(z)
            check(reply.get("type") == "response" and reply.get("success"), f"{sid}: resume after 1012: {reply}")
            check(not reply["data"]["gap"], f"{sid}: resume after 1012 says gap: {reply}")
            if not any(m.get("type") == "agent_settled" for m in seen):
                seen += await until(z, lambda m: m.get("type") == "agent_settled")
            events = await prompt_to_end(z, "r", "after the restart")
            numbers = seqs(seen)
            increasing(numbers + seqs(events), f"{sid}: the draining worker's client across 1012")
            check(len(numbers) == len(set(numbers)), f"{sid}: an event came twice across 1012")
            check(deltas(seen) == final_text(seen), f"{sid}: missed or doubled deltas across 1012")
            check(not interruption_of(seen), f"{sid}: interrupted by a drain")
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


async def wait_for_file(path, timeout=60):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        check(time.monotonic() < deadline, f"{path} did not appear")
        await asyncio.sleep(0.1)


def replies(events, id):
    return [e for e in events if e.get("type") == "response" and e.get("id") == id]


async def nats_restart(url_a, url_b, nats_pid, flag):
    x = await connect(url_a)
    state, _ = await call(x, "s", "get_state")
    sid = state["data"]["sessionId"]
    y = await connect(f"{url_b}?session={sid}")
    await call(y, "s", "get_state")
    await x.send(json.dumps({"id": "p", "type": "prompt", "message": "stream slowly"}))

    def at_word(n):
        return lambda m: (m.get("type") == "message_update"
                          and m["assistantMessageEvent"].get("type") == "text_delta"
                          and m["assistantMessageEvent"].get("delta", "").startswith(f"w{n} "))

    seen_x, seen_y = await asyncio.gather(until(x, at_word(5)), until(y, at_word(5)))
    os.kill(int(nats_pid), signal.SIGKILL)
    # While the bus is away: a request through B's mirror.
    await y.send(json.dumps({"id": "during", "type": "get_state"}))
    await wait_for_file(flag)
    seen_x += await until(x, lambda m: m.get("type") == "agent_settled", 90)
    seen_y += await until(y, lambda m: m.get("type") == "agent_settled", 90)
    # The answer to the request sent meanwhile may come after the run: wait for it a little.
    if not replies(seen_y, "during"):
        seen_y += await until(y, lambda m: m.get("id") == "during", 30)
    during = replies(seen_y, "during")
    check(len(during) == 1, f"the request sent while nats was away: answered {len(during)} times: {during}")
    if not during[0]["success"]:
        check(during[0].get("error"), f"an error without a word: {during[0]}")
    print(f"while nats was away: {'answered' if during[0]['success'] else during[0]['error']}")
    # The owner's client saw the whole run; the client on B saw the same events, once each.
    text = final_text(seen_x)
    check(deltas(seen_x) == text, f"A's client: missed or doubled deltas:\n{deltas(seen_x)!r}\n{text!r}")
    increasing(seqs(seen_x), "A's client across the nats restart")
    increasing(seqs(seen_y), "B's client across the nats restart")
    check(deltas(seen_y) == text, f"B's client: missed or doubled deltas:\n{deltas(seen_y)!r}\n{text!r}")
    run_x = [n for n in numbered(seen_x) if n[0] >= min(seqs(seen_y))]
    check(numbered(seen_y) == run_x, f"A and B saw different events:\n{numbered(seen_x)}\n{numbered(seen_y)}")
    # The conversation goes on, through B and on A.
    events = await prompt_to_settled(y, "q", "after the restart")
    final_text(events)
    await settled(x)
    # A full replay through B: every stored event, no gap.
    async with connect(f"{url_b}?session={sid}&afterSeq=0") as z:
        reply = await recv(z)
        check(reply.get("type") == "response" and reply.get("success"), f"full replay: {reply}")
        check(not reply["data"]["gap"], f"a full replay through B says gap: {reply}")
        check(reply["data"]["replayed"] > 0, f"nothing replayed: {reply}")
        # (`replayed` counts events this dialect does not show too.)
        replayed = []
        try:
            while True:
                replayed.append(await recv(z, 3))
        except asyncio.TimeoutError:
            pass
        numbers = seqs(replayed)
        increasing(numbers, "the full replay")
        check(set(seqs(seen_x)) <= set(numbers), "the replay lacks events A's client saw")
    await x.close()
    await y.close()
    print(f"nats_restart ok: {sid}")


def ui_request(method):
    return lambda m: m.get("type") == "extension_ui_request" and m.get("method") == method


async def dialogs(url_a, url_b):
    a = await connect(url_a)
    state, _ = await call(a, "s", "get_state")
    sid = state["data"]["sessionId"]
    b = await connect(f"{url_b}?session={sid}")
    await call(b, "s", "get_state")
    await a.send(json.dumps({"id": "p", "type": "prompt", "message": "/demo-ask Shall we?"}))
    ca, cb = await asyncio.gather(until(a, ui_request("confirm")), until(b, ui_request("confirm")))
    confirm = ca[-1]
    check((cb[-1]["id"], cb[-1]["seq"]) == (confirm["id"], confirm["seq"]), f"the confirm differs: {confirm} {cb[-1]}")
    # Answered from B (relayed to A), then from A: the first answer wins.
    await b.send(json.dumps({"type": "extension_ui_response", "id": confirm["id"], "confirmed": True}))
    sa, sb = await asyncio.gather(until(a, ui_request("select")), until(b, ui_request("select")))
    select = sa[-1]
    check(sb[-1]["id"] == select["id"] and sb[-1]["seq"] == select["seq"], "the select differs")
    await a.send(json.dumps({"type": "extension_ui_response", "id": confirm["id"], "confirmed": False}))
    # A client attaching to B now gets the pending select.
    async with connect(f"{url_b}?session={sid}&afterSeq={select['seq'] - 1}") as c:
        reply = await recv(c)
        check(reply.get("success") and not reply["data"]["gap"], f"attach mid-dialog: {reply}")
        resent = await until(c, lambda m: m.get("type") == "extension_ui_request")
        check(resent[-1]["id"] == select["id"], f"the pending select did not reach a new client on B: {resent}")
    # Answered from A; B's answer, later, is ignored.
    await a.send(json.dumps({"type": "extension_ui_response", "id": select["id"], "value": "green"}))
    ia, ib = await asyncio.gather(until(a, ui_request("input")), until(b, ui_request("input")))
    check(ia[-1]["id"] == ib[-1]["id"], "the input differs")
    await b.send(json.dumps({"type": "extension_ui_response", "id": select["id"], "value": "red"}))
    await b.send(json.dumps({"type": "extension_ui_response", "id": ib[-1]["id"], "value": "Ada"}))
    na, nb = await asyncio.gather(until(a, ui_request("notify")), until(b, ui_request("notify")))
    for name, seen in (("A", ca + sa + ia + na), ("B", cb + sb + ib + nb)):
        text = seen[-1]["message"]
        check("green" in text and "Ada" in text and "red" not in text, f"{name}: answers: {text}")
        asked = [m["id"] for m in seen if m.get("type") == "extension_ui_request" and m.get("method") != "notify"]
        check(len(asked) == len(set(asked)) == 3, f"{name}: dialogs seen {asked}")
    check(numbered(ca + sa + ia + na) == numbered(cb + sb + ib + nb), "A and B saw different events")
    await a.close()
    await b.close()
    print(f"dialogs ok: {sid}")


def acp_chunk(m):
    return m.get("method") == "session/update" and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"


async def acp(url_a, url_b):
    init = {"protocolVersion": 1, "clientCapabilities": {}}
    cwd = os.getcwd()
    async with connect(f"{url_a}?protocol=acp") as a:
        await acp_call(a, 0, "initialize", init)
        result, _ = await acp_call(a, 1, "session/new", {"cwd": cwd, "mcpServers": []})
        sid = result["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello over ACP on A"}]}
        result, before = await acp_call(a, 2, "session/prompt", prompt)
        check(result["stopReason"] == "end_turn", f"prompt on A: {result}")
        said = acp_text(before, sid, "agent_message_chunk")
        check(said, "A streamed nothing")
        # B loads it: A owns it, B serves it through its mirror; the history is replayed.
        async with connect(f"{url_b}?protocol=acp") as b:
            await acp_call(b, 0, "initialize", init)
            _, replay = await acp_call(b, 1, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
            check("hello over ACP on A" in acp_text(replay, sid, "user_message_chunk"), f"load on B: {replay}")
            check(acp_text(replay, sid, "agent_message_chunk") == said, f"load on B: {replay}")
            result, _ = await acp_call(b, 2, "session/list", {})
            check(any(s["sessionId"] == sid for s in result["sessions"]), f"session/list on B: {result}")
            # A prompt from B runs on A and streams to both.
            prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello from B"}]}
            result, before = await acp_call(b, 3, "session/prompt", prompt)
            check(result["stopReason"] == "end_turn", f"prompt from B: {result}")
            check(acp_text(before, sid, "agent_message_chunk"), f"B's prompt streamed nothing to B: {before}")
            seen = await until(a, acp_chunk)
            check(acp_text(seen, sid, "agent_message_chunk"), "A saw nothing of B's prompt")
            # session/resume from another connection on B: no replay, and it goes on.
            async with connect(f"{url_b}?protocol=acp") as c:
                await acp_call(c, 0, "initialize", init)
                _, replay = await acp_call(c, 1, "session/resume", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
                check(not acp_text(replay, sid, "user_message_chunk"), f"resume replayed the history: {replay}")
                prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "after the resume"}]}
                result, before = await acp_call(c, 2, "session/prompt", prompt)
                check(result["stopReason"] == "end_turn", f"prompt after resume: {result}")
                check(acp_text(before, sid, "agent_message_chunk"), "the resumed session streamed nothing")
            # An unknown session is an error on B too, and the connection goes on.
            await b.send(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "session/load",
                                     "params": {"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []}}))
            reply = (await until(b, lambda m: m.get("id") == 9))[-1]
            check("error" in reply, f"load of an unknown session on B: {reply}")
    print(f"acp ok: {sid}")


async def owner_lost(url_a, url_b, pid_a):
    """A session made and prompted on A, A killed, the session taken over on
    B (which numbers nothing yet): its id, the event numbers A sent, and B's
    open connection to it."""
    async with connect(url_a) as x:
        state, _ = await call(x, "s", "get_state")
        sid = state["data"]["sessionId"]
        events = await prompt_to_settled(x, "p", "before the loss")
    numbers = seqs(events)
    # A stores its events in the stream as they come (acknowledged in
    # batches): give the last ones time to be stored before A dies.
    await asyncio.sleep(2)
    os.kill(int(pid_a), signal.SIGKILL)
    y = await connect(f"{url_b}?session={sid}")
    reply = await recv(y, 60)
    check(reply.get("success") and reply["data"]["lastSeq"] == max(numbers), f"takeover on B: {reply}")
    return sid, numbers, y


async def replayed_until_quiet(ws):
    """The frames `ws` receives until it is quiet for 3 s."""
    replayed = []
    try:
        while True:
            replayed.append(await recv(ws, 3))
    except asyncio.TimeoutError:
        pass
    return replayed


async def takeover_replay(url_a, url_b, url_c, pid_a):
    sid, numbers, y = await owner_lost(url_a, url_b, pid_a)
    async with y:
        async with connect(f"{url_c}?session={sid}&afterSeq=0") as z:
            reply = await recv(z)
            check(reply.get("type") == "response" and reply.get("success"), f"full replay on C: {reply}")
            check(not reply["data"]["gap"], f"a full replay through the new owner's mirror says gap: {reply}")
            replayed = await replayed_until_quiet(z)
            check(seqs(replayed) == numbers, f"replayed {seqs(replayed)}, the owner sent {numbers}")
    print(f"takeover_replay ok: {sid}")


async def retention(url_a, url_b, pid_a, keep):
    keep = int(keep)
    sid, numbers, y = await owner_lost(url_a, url_b, pid_a)
    await y.close()
    check(len(numbers) > keep, f"only {len(numbers)} events: nothing to drop with {keep} kept")
    # B holds none of A's events: a full replay comes from the stream, which kept the last KEEP.
    async with connect(f"{url_b}?session={sid}&afterSeq=0") as z:
        reply = await recv(z)
        check(reply.get("type") == "response" and reply.get("success"), f"full replay on B: {reply}")
        check(reply["data"]["gap"] is True, f"a replay reaching past the retention must say gap: {reply}")
        check(0 < reply["data"]["replayed"] <= keep, f"replayed {reply['data']['replayed']}, kept {keep}: {reply}")
        got = seqs(await replayed_until_quiet(z))
        check(got and got == numbers[-len(got):], f"replayed {got}, not the last of {numbers}")
    print(f"retention ok: {sid}, {len(got)} of {len(numbers)} events replayed")


def tool_end(m):
    return m.get("type") == "tool_execution_end"


async def approvals(url_a, url_b):
    a = await connect(url_a)
    state, _ = await call(a, "s", "get_state")
    sid = state["data"]["sessionId"]
    b = await connect(f"{url_b}?session={sid}")
    await call(b, "s", "get_state")
    results = []
    for n, (first, late, answer) in enumerate(((b, a, "Allow"), (a, b, "Block"))):
        await a.send(json.dumps({"id": f"p{n}", "type": "prompt", "message": "run the tool"}))
        qa, qb = await asyncio.gather(until(a, ui_request("select")), until(b, ui_request("select")))
        check(qa[-1]["id"] == qb[-1]["id"] and "bash" in qa[-1]["title"], f"approvals differ: {qa[-1]} {qb[-1]}")
        await first.send(json.dumps({"type": "extension_ui_response", "id": qa[-1]["id"], "value": answer}))
        ea, eb = await asyncio.gather(until(a, tool_end), until(b, tool_end))
        # The other client's answer, later, changes nothing.
        other = "Block" if answer == "Allow" else "Allow"
        await late.send(json.dumps({"type": "extension_ui_response", "id": qa[-1]["id"], "value": other}))
        check(ea[-1] == eb[-1], f"the tool's end differs:\n{ea[-1]}\n{eb[-1]}")
        results.append(ea[-1])
        await settled(a)
        await settled(b)
    ran, blocked = results
    check(not ran.get("isError") and "approved-ran" in json.dumps(ran), f"allowed from B: {ran}")
    check(blocked.get("isError") and "approved-ran" not in json.dumps(blocked), f"blocked from A: {blocked}")
    await a.close()
    await b.close()
    print(f"approvals ok: {sid}")


SCENARIOS = {"approvals": approvals, "takeover_replay": takeover_replay, "acp": acp, "dialogs": dialogs, "nats_restart": nats_restart, "drain": drain, "interrupted_dialects": interrupted_dialects, "relay": relay, "spread": spread, "killed": killed, "resume": resume, "touch": touch,
             "found": found, "paused": paused, "retention": retention}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in SCENARIOS:
        fail(f"usage: {sys.argv[0]} {{{'|'.join(SCENARIOS)}}} ARG...")
    asyncio.run(SCENARIOS[sys.argv[1]](*sys.argv[2:]))
