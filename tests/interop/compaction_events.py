#!/usr/bin/env python3
"""Run the same compaction scenarios against pi-rpc and the reference pi 1.6.0
(each with its own fake model server on 127.0.0.1) and compare the event and
response sequences line by line (types, reasons, flags, error texts).

Usage: tests/interop/compaction_events.py PI_RPC_BIN FAKE_SERVER_BIN PI_PACKAGE_DIR NODE_BIN
Exit code 0 when every scenario matches (pi 1.6 events pi-rpc does not emit
by design - entry_appended, message_update, system messages - are ignored).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

PI_RPC, FAKE, PKG, NODE = (os.path.abspath(a) for a in sys.argv[1:5])


def words(w, n):
    return " ".join([w] * n)


def reply(text, prompt=100, completion=10, delay=None):
    r = {"text": text, "usage": {"promptTokens": prompt, "completionTokens": completion}}
    if delay:
        r["delayMs"] = delay
    return r


def error(status, message, code=None):
    return {"error": {"status": status, "body": {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}}}


OVERFLOW = error(400, "This model's maximum context length is 4000 tokens. However, your messages resulted in 5000 tokens.", "context_length_exceeded")

SCENARIOS = {
    "manual": {
        "window": 128000, "keep": 100, "reserve": 16384,
        "replies": [reply(words("alpha", 60), 500, 100), reply(words("beta", 60), 900, 100), reply("SUMMARY", 300, 40)],
        "steps": [("prompt", words("one", 60)), ("prompt", words("two", 60)), ("compact", "Focus on tests"), ("compact", None), ("stats", None)],
    },
    "too_small": {
        "window": 128000, "keep": 20000, "reserve": 16384,
        "replies": [reply("short")],
        "steps": [("prompt", "hi"), ("compact", None)],
    },
    "threshold": {
        "window": 4000, "keep": 100, "reserve": 1000,
        "replies": [reply(words("alpha", 60), 400, 100), reply(words("beta", 60), 3400, 100), reply("THRESHOLD", 50, 5)],
        "steps": [("prompt", words("one", 60)), ("prompt", words("two", 60)), ("stats", None)],
    },
    "between_turns": {
        "window": 4000, "keep": 100, "reserve": 1000,
        "replies": [reply(words("alpha", 60), 400, 100),
                    {"text": "Running it.", "toolCalls": [{"id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}],
                     "usage": {"promptTokens": 3400, "completionTokens": 10}},
                    reply("BETWEEN TURNS", 50, 5), reply("done", 200, 10)],
        "steps": [("prompt", words("one", 60)), ("prompt", words("two", 60)), ("stats", None)],
    },
    "abort_auto": {
        "window": 4000, "keep": 100, "reserve": 1000,
        "replies": [reply(words("alpha", 60), 400, 100), reply(words("beta", 60), 3400, 100),
                    {"textChunks": ["slow ", "summary"], "delayMs": 800}],
        "steps": [("prompt", words("one", 60)), ("prompt_then_abort", words("two", 60)), ("state", None)],
    },
    "overflow": {
        "window": 128000, "keep": 150, "reserve": 16384,
        "replies": [reply(words("alpha", 60), 500, 100), reply(words("beta", 60), 700, 100), OVERFLOW, reply("OVERFLOW SUMMARY"), reply("recovered")],
        "steps": [("prompt", words("one", 60)), ("prompt", words("uno", 60)), ("prompt", "retry me " + words("two", 60))],
    },
    "overflow_twice": {
        "window": 128000, "keep": 150, "reserve": 16384,
        "replies": [reply(words("alpha", 60), 500, 100), reply(words("beta", 60), 700, 100), OVERFLOW, reply("OVERFLOW SUMMARY"), OVERFLOW],
        "steps": [("prompt", words("one", 60)), ("prompt", words("uno", 60)), ("prompt", words("two", 60))],
    },
    "summary_retry": {
        "window": 128000, "keep": 100, "reserve": 16384,
        "replies": [reply(words("alpha", 60)), reply(words("beta", 60)),
                    {"error": {"status": 500, "body": {"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": None, "code": None}}}},
                    reply("RETRIED")],
        "steps": [("prompt", words("one", 60)), ("prompt", words("two", 60)), ("compact", None)],
    },
    "abort": {
        "window": 128000, "keep": 100, "reserve": 16384,
        "replies": [reply(words("alpha", 60)), reply(words("beta", 60)), {"textChunks": ["slow ", "summary"], "delayMs": 800}],
        "steps": [("prompt", words("one", 60)), ("prompt", words("two", 60)), ("compact_then_abort", None), ("state", None)],
    },
}

ESTIMATED = False
IGNORED = {"entry_appended", "message_update", "thinking_level_changed"}


def normalize(v):
    """What is compared of one output line."""
    t = v.get("type")
    if t == "response":
        out = {"type": "response", "command": v.get("command"), "success": v.get("success")}
        if not v.get("success"):
            out["error"] = v.get("error")
        data = v.get("data")
        if v.get("command") == "compact" and data:
            out["data"] = sorted(data.keys())
        if v.get("command") == "get_session_stats" and data:
            out["contextUsage"] = {k: data["contextUsage"][k] for k in ("tokens", "percent")}
        if v.get("command") == "get_state" and data:
            out["isCompacting"] = data.get("isCompacting")
        return out
    if t in ("message_start", "message_end"):
        m = v["message"]
        return {"type": t, "role": m["role"], "stopReason": m.get("stopReason") if t == "message_end" else None}
    keep = {"type": t}
    for k in ("reason", "aborted", "willRetry", "attempt", "maxAttempts", "source", "errorMessage"):
        if k in v:
            keep[k] = v[k]
    if t == "compaction_end":
        keep["result"] = sorted(v["result"].keys()) if v.get("result") else None
        if v.get("result"):
            # After a context edit pi estimates the whole context, system
            # prompt included; ours is a different prompt, so only
            # usage-based counts are comparable.
            if not ESTIMATED:
                keep["tokensBefore"] = v["result"]["tokensBefore"]
            keep["summary"] = v["result"]["summary"]
    if t == "agent_end":
        keep["roles"] = [m["role"] for m in v["messages"] if m["role"] != "system"]
    return keep


def run(cmd, env, cwd, steps):
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = []
    n = 0

    def send(obj):
        p.stdin.write(json.dumps(obj) + "\n")
        p.stdin.flush()

    def until(pred):
        while True:
            line = p.stdout.readline()
            if not line:
                raise RuntimeError("output ended; so far: %s" % out[-5:])
            v = json.loads(line)
            if v.get("type") == "message_start" and v["message"]["role"] == "system":
                continue
            if v.get("type") == "message_end" and v["message"]["role"] == "system":
                continue
            if v.get("type") not in IGNORED:
                out.append(normalize(v))
            if pred(v):
                return

    for kind, arg in steps:
        n += 1
        rid = "r%d" % n
        if kind == "prompt":
            send({"id": rid, "type": "prompt", "message": arg})
            until(lambda v: v.get("type") == "agent_settled")
        elif kind == "compact":
            cmd_ = {"id": rid, "type": "compact"}
            if arg:
                cmd_["customInstructions"] = arg
            send(cmd_)
            until(lambda v: v.get("id") == rid)
        elif kind == "compact_then_abort":
            send({"id": rid, "type": "compact"})
            until(lambda v: v.get("type") == "compaction_start")
            time.sleep(0.2)
            send({"id": rid + "a", "type": "abort"})
            seen = set()
            until(lambda v: (v.get("type") == "response" and seen.add(v.get("id")) is None and {rid, rid + "a"} <= seen))
        elif kind == "prompt_then_abort":
            send({"id": rid, "type": "prompt", "message": arg})
            until(lambda v: v.get("type") == "compaction_start")
            time.sleep(0.2)
            send({"id": rid + "a", "type": "abort"})
            until(lambda v: v.get("id") == rid + "a")
        elif kind == "stats":
            send({"id": rid, "type": "get_session_stats"})
            until(lambda v: v.get("id") == rid)
        elif kind == "state":
            send({"id": rid, "type": "get_state"})
            until(lambda v: v.get("id") == rid)
    p.stdin.close()
    p.wait(timeout=20)
    return out


def setup(sc, dirpath):
    script = os.path.join(dirpath, "script.json")
    with open(script, "w") as f:
        json.dump({"replies": sc["replies"], "fallback": {"text": "FALLBACK"}}, f)
    requests = os.path.join(dirpath, "requests.jsonl")
    server = subprocess.Popen([FAKE, "--requests", requests, script], stdout=subprocess.PIPE, text=True)
    base = server.stdout.readline().strip()
    agent = os.path.join(dirpath, "agent")
    os.makedirs(agent)
    model = {"id": "fake-model", "name": "Fake Model", "contextWindow": sc["window"], "maxTokens": 16384,
             "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
    with open(os.path.join(agent, "models.json"), "w") as f:
        json.dump({"providers": {"fake": {"baseUrl": base, "api": "openai-completions", "apiKey": "k", "models": [model]}}}, f)
    with open(os.path.join(agent, "settings.json"), "w") as f:
        json.dump({"defaultProvider": "fake", "defaultModel": "fake-model", "retry": {"baseDelayMs": 20},
                   "compaction": {"keepRecentTokens": sc["keep"], "reserveTokens": sc["reserve"]}}, f)
    env = {"PATH": os.environ["PATH"], "HOME": dirpath, "PI_CODING_AGENT_DIR": agent, "PI_OFFLINE": "1"}
    cwd = os.path.join(dirpath, "cwd")
    os.makedirs(cwd)
    return server, env, cwd, requests


def summary_requests(path):
    """The summarisation requests: messages (role, text) and the output cap."""
    time.sleep(0.1)
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        body = json.loads(line)["body"]
        msgs = body.get("messages", [])
        if not msgs or not str(msgs[0].get("content", "")).startswith("You are a context summarization assistant"):
            continue
        text = lambda c: c if isinstance(c, str) else "".join(p.get("text", "") for p in c)
        out.append({"messages": [(m["role"], text(m["content"])) for m in msgs],
                    "max_completion_tokens": body.get("max_completion_tokens"), "tools": body.get("tools"),
                    "stream": body.get("stream")})
    return out


failed = 0
for name, sc in SCENARIOS.items():
    ESTIMATED = name.startswith("overflow")
    results = {}
    for impl in ("pi-rpc", "pi"):
        with tempfile.TemporaryDirectory() as d:
            server, env, cwd, requests = setup(sc, d)
            try:
                cmd = [PI_RPC, "--mode", "rpc", "--no-session"] if impl == "pi-rpc" else [NODE, os.path.join(PKG, "dist/cli.js"), "--mode", "rpc", "--no-session", "--offline"]
                results[impl] = run(cmd, env, cwd, sc["steps"]) + summary_requests(requests)
            finally:
                server.kill()
    a, b = results["pi-rpc"], results["pi"]
    if a == b:
        print("same   %s (%d lines)" % (name, len(a)))
        continue
    failed += 1
    print("DIFFER %s" % name)
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        mark = "  " if x == y else "!!"
        print("  %s %-3d pi-rpc %s\n         pi     %s" % (mark, i, json.dumps(x), json.dumps(y)))
sys.exit(1 if failed else 0)
