#!/usr/bin/env python3
"""A `pi serve` client in Python (the `websockets` library) speaking the
native JSONL dialect, one scenario per run; tests/e2e/serve.rs starts the
server and runs each scenario, and fails when this exits non-zero.

Usage: native_client.py SCENARIO URL [ARG...]

Scenarios:
  flows URL                two clients on two sessions at once, detach,
                           re-attach by session id, new_session, afterSeq
  reconnect URL            drop the connection mid-run, re-attach with
                           afterSeq: every missed message_update exactly once
  dialog URL               a pending extension dialog re-sent after reconnect,
                           answered once
  unload URL               an idle session unloaded (/readyz) and reloaded
  auth URL TOKEN ORIGIN    missing/wrong token and a bad Origin refused (ORIGIN
                           allowed by the server, or -)
  oversize URL LIMIT       a message over the limit closes with 1009
  scale_write URL ID       attach to session ID (?session=, the routing key), prompt
  owned URL ID             session ID is refused: owned by another worker
  scale_continue URL ID    session ID goes on with its history
  stop URL PID             SIGTERM to the server: open connections closed with 1001
  acp URL                  ACP over WebSocket: initialize, session/new, session/prompt
                           (updates, end_turn), session/load from a second connection
  catalog URL WANT [PROV]  a session's models of PROV (OpenRouter unless
                           given; get_available_models) until they are WANT
                           (a JSON list of ids), then a second session's at
                           once; prints both as JSON
  unix PATH                the same server on a unix socket
  slow URL                 a client that does not read is disconnected while
                           another session streams on
"""

import asyncio
import json
import os
import signal
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

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


async def call(ws, id, command, **fields):
    await ws.send(json.dumps({"id": id, "type": command, **fields}))
    seen = await until(ws, lambda m: m.get("type") == "response" and m.get("id") == id)
    reply = seen[-1]
    check(reply.get("success"), f"{command} failed: {reply}")
    return reply, seen[:-1]


def seqs(events):
    return [e["seq"] for e in events if "seq" in e]


def increasing(numbers, what):
    # Strictly increasing; not consecutive: an event this dialect does not
    # show keeps its number all the same.
    check(numbers, f"{what}: no numbered events")
    for a, b in zip(numbers, numbers[1:]):
        check(b > a, f"{what}: seq {a} then {b} (each must be above the last: lost order or a duplicate)")


def deltas(events):
    return "".join(
        e["assistantMessageEvent"].get("delta", "")
        for e in events
        if e.get("type") == "message_update" and e["assistantMessageEvent"].get("type") == "text_delta"
    )


def http_base(url):
    parts = urllib.parse.urlsplit(url)
    return f"http://{parts.netloc}"


def readyz(url):
    """`/readyz` of the worker at `url`: (status, its JSON body), a 503 included."""
    try:
        with urllib.request.urlopen(http_base(url) + "/readyz", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def http_get(url):
    with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
        return resp.status, resp.read().decode()


async def prompt_to_end(ws, id, message):
    _, _ = await call(ws, id, "prompt", message=message)
    return await until(ws, lambda m: m.get("type") == "agent_end")


async def flows(url):
    async with websockets.connect(url) as a, websockets.connect(url) as b:
        (sa, _), (sb, _) = await asyncio.gather(call(a, "s", "get_state"), call(b, "s", "get_state"))
        id_a, id_b = sa["data"]["sessionId"], sb["data"]["sessionId"]
        check(id_a != id_b, "two connections share a session")
        ea, eb = await asyncio.gather(prompt_to_end(a, "p", "hello from A"), prompt_to_end(b, "p", "hello from B"))
        check("hello from A" in deltas(ea) and "hello from B" not in deltas(ea), f"A saw: {deltas(ea)!r}")
        check("hello from B" in deltas(eb) and "hello from A" not in deltas(eb), f"B saw: {deltas(eb)!r}")
        increasing(seqs(ea), "session A")
        increasing(seqs(eb), "session B")
        last_a = seqs(ea)[-1]
    # A's connection is gone; its session stays. Attach again by id.
    async with websockets.connect(url) as c:
        reply, _ = await call(c, "1", "switch_session", sessionPath=id_a)
        check(reply["data"]["sessionId"] == id_a, f"attached elsewhere: {reply}")
        # The latest number may be of an event this dialect does not show.
        check(reply["data"]["lastSeq"] >= last_a, f"lastSeq {reply['data']['lastSeq']} < {last_a}")
        last_a = reply["data"]["lastSeq"]
        messages, _ = await call(c, "2", "get_messages")
        texts = json.dumps(messages["data"]["messages"])
        check("hello from A" in texts and len(messages["data"]["messages"]) == 3, f"history: {texts[:300]}")
        # A new session, then back to A with afterSeq at its end: nothing replayed.
        fresh, _ = await call(c, "3", "new_session")
        check(fresh["data"]["sessionId"] not in (id_a, id_b), f"new_session: {fresh}")
        state, _ = await call(c, "4", "get_state")
        check(state["data"]["sessionId"] == fresh["data"]["sessionId"], "not attached to the new session")
        back, _ = await call(c, "5", "switch_session", sessionPath=id_a, afterSeq=last_a)
        check(back["data"]["replayed"] == 0 and not back["data"]["gap"], f"replay after the end: {back}")
        state, between = await call(c, "6", "get_state")
        check(state["data"]["sessionId"] == id_a and not between, f"after re-attach: {between} {state}")
        # Switching to an unknown session is a clear error, and the connection goes on.
        await c.send(json.dumps({"id": "7", "type": "switch_session", "sessionPath": "no-such-session"}))
        err = (await until(c, lambda m: m.get("id") == "7"))[-1]
        check(not err["success"] and "no-such-session" in err["error"], f"unknown session: {err}")
        state, _ = await call(c, "8", "get_state")
        check(state["data"]["sessionId"] == id_a, "the failed switch moved the connection")
        # A message many times the server's WebSocket read buffer (4 KiB) arrives whole.
        long_name = "n" * 50_000 + " end"
        await call(c, "9", "set_session_name", name=long_name)
        state, _ = await call(c, "10", "get_state")
        check(state["data"].get("sessionName") == long_name, f"a 50 KB message: {len(state['data'].get('sessionName') or '')} chars came back")
    print(f"flows ok: sessions {id_a} {id_b}")


async def reconnect(url):
    async with websockets.connect(url) as ws:
        state, _ = await call(ws, "s", "get_state")
        sid = state["data"]["sessionId"]
        await call(ws, "p", "prompt", message="stream slowly")
        first = await until(ws, lambda m: m.get("type") == "message_update"
                            and m["assistantMessageEvent"].get("type") == "text_delta"
                            and m["assistantMessageEvent"].get("delta", "").startswith("w5 "))
    # Dropped mid-run: the run goes on without a client.
    await asyncio.sleep(0.3)
    after = first[-1]["seq"]
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"id": "r", "type": "switch_session", "sessionPath": sid, "afterSeq": after}))
        reply = await recv(ws)
        check(reply.get("type") == "response" and reply["success"], f"re-attach: {reply}")
        check(reply["data"]["replayed"] > 0 and not reply["data"]["gap"], f"nothing replayed: {reply}")
        rest = await until(ws, lambda m: m.get("type") == "agent_end")
        increasing(seqs(first) + seqs(rest), "across the reconnect")
        check(rest[0]["seq"] > after, f"first after re-attach: {rest[0]}")
        end = [m for m in rest if m.get("type") == "message_end" and m["message"]["role"] == "assistant"]
        final = "".join(p.get("text", "") for p in end[-1]["message"]["content"])
        got = deltas(first) + deltas(rest)
        check(got == final, f"missed or doubled deltas:\n{got!r}\n!=\n{final!r}")
    print(f"reconnect ok: {len(first)} events before, {len(rest)} after, {len(final)} chars")


async def dialog(url):
    async with websockets.connect(url) as ws:
        state, _ = await call(ws, "s", "get_state")
        sid = state["data"]["sessionId"]
        await ws.send(json.dumps({"id": "p", "type": "prompt", "message": "/demo-ask Shall we?"}))
        seen = await until(ws, lambda m: m.get("type") == "extension_ui_request" and m.get("method") == "confirm")
        confirm = seen[-1]
    # Gone without answering; the dialog waits. Re-attach before the dialog's number.
    async with websockets.connect(url) as ws, websockets.connect(url) as other:
        await ws.send(json.dumps({"id": "r", "type": "switch_session", "sessionPath": sid,
                                  "afterSeq": confirm["seq"] - 1}))
        reply = await recv(ws)
        check(reply.get("success"), f"re-attach: {reply}")
        resent = await recv(ws)
        check(resent.get("type") == "extension_ui_request" and resent["id"] == confirm["id"],
              f"the pending dialog was not re-sent: {resent}")
        # A second client attaching without afterSeq gets the pending dialog too.
        await other.send(json.dumps({"id": "r2", "type": "switch_session", "sessionPath": sid}))
        check((await recv(other)).get("success"), "second attach")
        check((await recv(other)).get("id") == confirm["id"], "second client: no pending dialog")
        answer = {"type": "extension_ui_response", "id": confirm["id"], "confirmed": True}
        await ws.send(json.dumps(answer))
        await other.send(json.dumps(answer))  # a second answer is ignored
        nxt = await until(ws, lambda m: m.get("type") == "extension_ui_request")
        check(nxt[-1]["method"] == "select", f"after the answer: {nxt[-1]}")
        check(not any(m.get("id") == confirm["id"] for m in nxt), "the confirm came twice")
        await ws.send(json.dumps({"type": "extension_ui_response", "id": nxt[-1]["id"], "value": "green"}))
        inp = (await until(ws, lambda m: m.get("type") == "extension_ui_request"))[-1]
        await ws.send(json.dumps({"type": "extension_ui_response", "id": inp["id"], "value": "Ada"}))
        notes = await until(ws, lambda m: m.get("method") == "notify")
        text = notes[-1]["message"]
        check("green" in text and "Ada" in text, f"answers: {text}")
        # The second client saw the same dialogs, and exactly one select.
        seen_other = await until(other, lambda m: m.get("method") == "notify")
        selects = [m for m in seen_other if m.get("type") == "extension_ui_request" and m.get("method") == "select"]
        check(len(selects) == 1, f"second client saw {len(selects)} selects")
    print("dialog ok")


async def readyz_sessions(url):
    status, body = http_get(http_base(url) + "/readyz")
    check(status == 200, f"/readyz {status}")
    return json.loads(body)["sessions"]


async def unload(url):
    status, body = http_get(http_base(url) + "/healthz")
    check(status == 200 and body.strip() == "ok", f"/healthz: {status} {body!r}")
    async with websockets.connect(url) as ws:
        state, _ = await call(ws, "s", "get_state")
        sid = state["data"]["sessionId"]
        await prompt_to_end(ws, "p", "remember me")
        check(await readyz_sessions(url) == 1, "the session is not loaded")
    for _ in range(100):
        if await readyz_sessions(url) == 0:
            break
        await asyncio.sleep(0.1)
    else:
        fail("the idle session was not unloaded")
    async with websockets.connect(url) as ws:
        reply, _ = await call(ws, "r", "switch_session", sessionPath=sid, afterSeq=1)
        check(reply["data"]["gap"], f"events of the unloaded load cannot be replayed: {reply}")
        messages, _ = await call(ws, "m", "get_messages")
        check("remember me" in json.dumps(messages["data"]["messages"]), "history lost on reload")
        check(await readyz_sessions(url) == 1, "not reloaded")
        events = await prompt_to_end(ws, "p2", "again")
        check(min(seqs(events)) > reply["data"]["lastSeq"] >= 1, "numbers went back after the reload")
    print("unload ok")


async def refused(url, status, **kw):
    try:
        async with websockets.connect(url, **kw):
            fail(f"connected to {url} with {kw}")
    except InvalidStatus as e:
        check(e.response.status_code == status, f"status {e.response.status_code} != {status}")
        return e.response.body.decode(errors="replace")


async def auth(url, token, origin):
    body = await refused(url, 401)
    check("token" in body, f"no-token refusal: {body}")
    await refused(url, 401, additional_headers={"Authorization": "Bearer wrong"})
    await refused(url + "?token=wrong", 401)
    body = await refused(url, 403, additional_headers={"Authorization": f"Bearer {token}"},
                         origin="http://evil.example")
    check("evil.example" in body, f"origin refusal: {body}")
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        await call(ws, "1", "get_state")
    # A browser passes the token in the query, with its Origin ("-": none allowed).
    kw = {"origin": origin} if origin != "-" else {}
    async with websockets.connect(url + "?token=" + urllib.parse.quote(token), **kw) as ws:
        await call(ws, "1", "get_state")
    print("auth ok")


async def oversize(url, limit):
    async with websockets.connect(url, max_size=None) as ws:
        await call(ws, "1", "get_state")
        await ws.send(json.dumps({"id": "2", "type": "prompt", "message": "x" * (int(limit) * 2)}))
        try:
            while True:
                await recv(ws)
        except ConnectionClosed as e:
            check(e.rcvd is not None and e.rcvd.code == 1009, f"closed with {e.rcvd}")
            check("limit" in e.rcvd.reason, f"close reason: {e.rcvd.reason!r}")
    # The server goes on.
    async with websockets.connect(url) as ws:
        await call(ws, "1", "get_state")
    print("oversize ok")


async def slow(url):
    # A client with a tiny receive buffer that stops reading after its prompt.
    parts = urllib.parse.urlsplit(url)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((parts.hostname, parts.port))
    sleeper = await websockets.connect(url, sock=sock, max_queue=1, ping_interval=None, max_size=None)
    state, _ = await call(sleeper, "s", "get_state")
    sid = state["data"]["sessionId"]
    await call(sleeper, "p", "prompt", message="flood")

    async def observe():
        # A client that reads sees the flooding run to its end.
        async with websockets.connect(url, max_size=None) as ws:
            await call(ws, "o", "switch_session", sessionPath=sid)
            return await until(ws, lambda m: m.get("type") == "agent_end", timeout=120)

    async def other():
        async with websockets.connect(url) as ws:
            return await prompt_to_end(ws, "p", "hello while another client sleeps")

    observed, others = await asyncio.gather(observe(), other())
    check(len(observed) > 1500, f"the observer saw {len(observed)} events")
    check(deltas(others), "the other session streamed nothing")
    # Now read what the sleeper was sent: it was cut off before the end.
    got = []
    try:
        while True:
            got.append(await recv(sleeper, 10))
            check(got[-1].get("type") != "agent_end", "the client that did not read got everything")
    except ConnectionClosed:
        pass
    print(f"slow ok: the sleeper got {len(got)} of {len(observed)}+ events before it was disconnected")


async def unix(path):
    async with websockets.unix_connect(path, "ws://localhost/rpc") as ws:
        state, _ = await call(ws, "1", "get_state")
        await prompt_to_end(ws, "2", "over a unix socket")
    print("unix ok")


async def scale_write(url, session):
    async with websockets.connect(f"{url}?session={session}") as ws:
        state, _ = await call(ws, "1", "get_state")
        check(state["data"]["sessionId"] == session, f"attached to {state['data']['sessionId']}")
        await prompt_to_end(ws, "2", "remember the lighthouse")
    print("scale_write ok")


async def owned(url, session):
    try:
        async with websockets.connect(f"{url}?session={session}") as ws:
            await recv(ws)
            fail("a second worker served a session owned elsewhere")
    except ConnectionClosed as e:
        check(e.rcvd is not None and e.rcvd.code == 1008, f"closed with {e.rcvd}")
        check("owned elsewhere" in e.rcvd.reason, f"reason: {e.rcvd.reason!r}")
    print("owned ok")


async def scale_continue(url, session):
    async with websockets.connect(f"{url}?session={session}") as ws:
        messages, _ = await call(ws, "1", "get_messages")
        check("remember the lighthouse" in json.dumps(messages["data"]["messages"]), "history lost")
        await prompt_to_end(ws, "2", "and now?")
        state, _ = await call(ws, "3", "get_state")
        check(state["data"]["messageCount"] == 5, f"messages: {state['data']['messageCount']}")
    print("scale_continue ok")


async def stop(url, pid):
    async with websockets.connect(url) as ws:
        await prompt_to_end(ws, "1", "written before the stop")
        os.kill(int(pid), signal.SIGTERM)
        try:
            while True:
                await recv(ws)
        except ConnectionClosed as e:
            check(e.rcvd is not None and e.rcvd.code == 1001, f"closed with {e.rcvd}")
    print("stop ok")


async def acp_call(ws, id, method, params, on_message=None):
    """An ACP request; returns its result and the messages before it."""
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    seen = await until(ws, lambda m: m.get("id") == id and ("result" in m or "error" in m))
    reply = seen[-1]
    check("result" in reply, f"{method} failed: {reply}")
    return reply["result"], seen[:-1]


def acp_text(messages, session_id, kind):
    return "".join(
        m["params"]["update"]["content"].get("text", "")
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["sessionId"] == session_id
        and m["params"]["update"].get("sessionUpdate") == kind
    )


async def acp(url):
    init = {"protocolVersion": 1, "clientCapabilities": {}}
    cwd = os.getcwd()
    async with websockets.connect(url) as a:
        result, _ = await acp_call(a, 0, "initialize", init)
        check(result["protocolVersion"] == 1 and result["agentCapabilities"]["loadSession"], f"initialize: {result}")
        result, _ = await acp_call(a, 1, "session/new", {"cwd": cwd, "mcpServers": []})
        session = result["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hello over ACP"}]}
        result, before = await acp_call(a, 2, "session/prompt", prompt)
        check(result["stopReason"] == "end_turn", f"prompt: {result}")
        said = acp_text(before, session, "agent_message_chunk")
        check(said, f"no agent_message_chunk before the end_turn result: {before}")

        # A second connection loads the live session: the conversation is replayed.
        async with websockets.connect(url) as b:
            await acp_call(b, 0, "initialize", init)
            _, replay = await acp_call(b, 1, "session/load", {"sessionId": session, "cwd": cwd, "mcpServers": []})
            check("hello over ACP" in acp_text(replay, session, "user_message_chunk"), f"load replay: {replay}")
            check(acp_text(replay, session, "agent_message_chunk") == said, f"load replay: {replay}")
            # The session is shared: a prompt from the second connection streams to the first too.
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}
            result, before = await acp_call(b, 2, "session/prompt", prompt)
            check(result["stopReason"] == "end_turn", f"second prompt: {result}")
            check(acp_text(before, session, "agent_message_chunk"), f"second prompt streamed nothing: {before}")
            seen = await until(a, lambda m: m.get("method") == "session/update"
                               and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk")
            check(acp_text(seen, session, "agent_message_chunk"), "the first connection saw nothing of it")
            # An unknown session is an error reply, and the connection goes on.
            await b.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/load",
                                     "params": {"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []}}))
            reply = (await until(b, lambda m: m.get("id") == 3))[-1]
            check("error" in reply, f"load of an unknown session: {reply}")
            result, _ = await acp_call(b, 4, "session/list", {})
            check(any(s["sessionId"] == session for s in result["sessions"]), f"session/list: {result}")
    print("acp ok")


async def catalog(url, want, provider="openrouter"):
    want = sorted(json.loads(want))

    async def openrouter(ws, id):
        reply, _ = await call(ws, id, "get_available_models")
        return sorted(m["id"] for m in reply["data"]["models"] if m["provider"] == provider)

    async with websockets.connect(url) as a:
        for attempt in range(240):
            first = await openrouter(a, f"a{attempt}")
            if first == want:
                break
            await asyncio.sleep(0.25)
        async with websockets.connect(url) as b:
            second = await openrouter(b, "b")
    print(json.dumps({"first": first, "second": second}))


SCENARIOS = {
    "acp": acp,
    "catalog": catalog,
    "stop": stop,
    "scale_write": scale_write,
    "owned": owned,
    "scale_continue": scale_continue,
    "unix": unix,
    "flows": flows,
    "reconnect": reconnect,
    "dialog": dialog,
    "unload": unload,
    "auth": auth,
    "oversize": oversize,
    "slow": slow,
}

if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in SCENARIOS:
        sys.exit(__doc__)
    asyncio.run(SCENARIOS[sys.argv[1]](*sys.argv[2:]))
