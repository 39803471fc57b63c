#!/usr/bin/env python3
"""Session files are interchangeable between pi-rpc and the reference pi 1.6.0.

1. pi-rpc writes a session (text, a tool call, an RPC bash, a compaction, a
   session name); the reference opens it with --session and answers
   get_messages; pi-rpc opens it too: the messages must be equal.
2. The reference writes a session (same steps); pi-rpc opens it: its
   get_messages must equal the reference's own answer for that file.
3. A hand-made file whose costs carry long float tails reads back bit for
   bit in both.

pi 1.6 `role:"system"` messages are left out of the comparison: pi-rpc keeps
them in the file (and in get_entries) but builds its own system prompt and
does not expose them as messages.

Usage: sessions.py PI_RPC_BIN FAKE_SERVER_BIN PI_PACKAGE_DIR NODE_BIN
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

PI_RPC, FAKE, PKG, NODE = (os.path.abspath(a) for a in sys.argv[1:5])


def reply(text, prompt=120, completion=12):
    return {"text": text, "usage": {"promptTokens": prompt, "completionTokens": completion}}


REPLIES = [
    reply("Hello! " + "hi " * 80),
    {"text": "Let me look.", "toolCalls": [{"id": "call_1", "name": "bash", "arguments": {"command": "echo interop"}}]},
    reply("The command printed interop. " + "ok " * 80),
    reply("## Goal\nCheck interop."),
    reply("After the compaction."),
]

STEPS = [
    {"type": "set_session_name", "name": "interop check"},
    {"type": "prompt", "message": "Say hello " + "please " * 60},
    {"type": "prompt", "message": "Run echo " + "now " * 60},
    {"type": "bash", "command": "echo from-rpc-bash"},
    {"type": "compact", "customInstructions": "Keep it short"},
    {"type": "prompt", "message": "And now?"},
]


class Env:
    def __init__(self, root):
        self.root = root
        script = os.path.join(root, "script.json")
        with open(script, "w") as f:
            json.dump({"replies": REPLIES, "fallback": {"text": "FALLBACK"}}, f)
        self.server = subprocess.Popen([FAKE, script], stdout=subprocess.PIPE, text=True)
        base = self.server.stdout.readline().strip()
        self.agent = os.path.join(root, "agent")
        os.makedirs(self.agent)
        model = {"id": "fake-model", "name": "Fake Model", "contextWindow": 128000, "maxTokens": 16384,
                 "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
        with open(os.path.join(self.agent, "models.json"), "w") as f:
            json.dump({"providers": {"fake-openai": {"baseUrl": base, "api": "openai-completions", "apiKey": "k", "models": [model]}}}, f)
        with open(os.path.join(self.agent, "settings.json"), "w") as f:
            json.dump({"defaultProvider": "fake-openai", "defaultModel": "fake-model", "retry": {"baseDelayMs": 20},
                       "compaction": {"keepRecentTokens": 100}}, f)
        self.cwd = os.path.join(root, "cwd")
        os.makedirs(self.cwd)
        self.sessions = os.path.join(root, "sessions")
        os.makedirs(self.sessions)
        self.env = {"PATH": os.environ["PATH"], "HOME": root, "PI_CODING_AGENT_DIR": self.agent, "PI_OFFLINE": "1"}

    def command(self, impl, args):
        if impl == "pi-rpc":
            return [PI_RPC, "--mode", "rpc"] + args
        return [NODE, os.path.join(PKG, "dist/cli.js"), "--mode", "rpc", "--offline"] + args

    def drive(self, impl, args, steps):
        """Run the steps; return the responses by step index."""
        p = subprocess.Popen(self.command(impl, args), cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        answers = []
        for i, step in enumerate(steps):
            rid = "s%d" % i
            p.stdin.write(json.dumps(dict(step, id=rid)) + "\n")
            p.stdin.flush()
            wait_settled = step["type"] == "prompt"
            response = None
            while True:
                line = p.stdout.readline()
                if not line:
                    raise RuntimeError("%s ended early at step %d" % (impl, i))
                v = json.loads(line)
                if v.get("type") == "response" and v.get("id") == rid:
                    response = v
                    if not response.get("success"):
                        raise RuntimeError("%s step %s failed: %s" % (impl, step, v))
                    if not wait_settled:
                        break
                if wait_settled and v.get("type") == "agent_settled" and response is not None:
                    break
            answers.append(response)
        p.stdin.close()
        p.wait(timeout=20)
        return answers

    def messages(self, impl, session_file):
        answers = self.drive(impl, ["--session", session_file], [{"type": "get_messages"}])
        return [m for m in answers[0]["data"]["messages"] if m.get("role") != "system"]

    def close(self):
        self.server.kill()


def newest_session(d):
    files = sorted(glob.glob(os.path.join(d, "**", "*.jsonl"), recursive=True), key=os.path.getmtime)
    if not files:
        raise RuntimeError("no session file in %s" % d)
    return files[-1]


def diff(a, b):
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            return "first difference at message %d:\n  pi-rpc: %s\n  pi:     %s" % (i, json.dumps(x)[:800], json.dumps(y)[:800])
    return "equal"


failed = False
for writer in ("pi-rpc", "pi"):
    with tempfile.TemporaryDirectory() as root:
        env = Env(root)
        try:
            env.drive(writer, ["--session-dir", env.sessions], STEPS)
            path = newest_session(env.sessions)
            with open(path) as f:
                before = f.read()
            ours = env.messages("pi-rpc", path)
            theirs = env.messages("pi", path)
            roles = [m["role"] for m in theirs]
            label = "written by %-6s" % writer
            if "compactionSummary" not in roles or "bashExecution" not in roles or "toolResult" not in roles:
                print("FAIL %s: the session lacks a compaction, bash or tool result: %s" % (label, roles))
                failed = True
            elif ours == theirs:
                print("same %s: %d messages (%s)" % (label, len(ours), ", ".join(roles)))
            else:
                print("DIFF %s: %s" % (label, diff(ours, theirs)))
                failed = True
            if writer == "pi-rpc":
                with open(path) as f:
                    if not f.read().startswith(before):
                        print("FAIL %s: opening the file rewrote earlier lines" % label)
                        failed = True
        finally:
            env.close()

# 3. Costs are JavaScript float sums whose shortest form can carry a long tail
# (0.002604 + 0.000165 = 0.0027689999999999998). A hand-made file full of
# them must read back bit for bit in both: pi-rpc's own release build once
# parsed floats with serde_json's fast path and moved them by one ulp.
def assistant(i, parent, cost_in, cost_out):
    total = cost_in + cost_out
    return {"type": "message", "id": "f%07d" % i, "parentId": parent, "timestamp": "2026-01-01T00:00:0%d.000Z" % i,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "answer %d" % i}],
                        "api": "openai-completions", "provider": "fake-openai", "model": "fake-model",
                        "usage": {"input": 868, "output": 11, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 879,
                                  "cost": {"input": cost_in, "output": cost_out, "cacheRead": 0, "cacheWrite": 0,
                                           "total": total, "totalFromProvider": False}},
                        "stopReason": "stop", "timestamp": 1767225600000 + i}}


with tempfile.TemporaryDirectory() as root:
    env = Env(root)
    try:
        path = os.path.join(env.sessions, "floats.jsonl")
        lines = [{"type": "session", "version": 3, "id": "0192a3b4-c5d6-7e8f-9a0b-1c2d3e4f5a6b",
                  "timestamp": "2026-01-01T00:00:00.000Z", "cwd": env.cwd}]
        parent = None
        pairs = [(0.002604, 0.000165), (0.1, 0.2), (3 / 1e6 * 1237, 15 / 1e6 * 97), (0.3 / 1e6 * 5, 1e-7 * 3),
                 (1.25e-5 * 7, 0.000015 * 13)]
        for i, (a, b) in enumerate(pairs, start=1):
            user = {"type": "message", "id": "u%07d" % i, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": [{"type": "text", "text": "q%d" % i}], "timestamp": 1}}
            lines += [user, assistant(i, user["id"], a, b)]
            parent = "f%07d" % i
        with open(path, "w") as f:
            f.write("".join(json.dumps(l) + "\n" for l in lines))
        ours = env.messages("pi-rpc", path)
        theirs = env.messages("pi", path)
        expected = [l["message"] for l in lines[1:]]
        totals = lambda ms: [m["usage"]["cost"]["total"] for m in ms if m["role"] == "assistant"]
        if totals(ours) == totals(expected) and ours == theirs:
            print("same float tails: %s" % ", ".join(repr(t) for t in totals(ours)))
        else:
            print("DIFF float tails: pi-rpc %s, pi %s, file %s" % (totals(ours), totals(theirs), totals(expected)))
            failed = True
    finally:
        env.close()
sys.exit(1 if failed else 0)
