#!/usr/bin/env python3
"""Deterministic generator of large pi session files (v3 format) for the benchmarks.

Usage: bench/session_gen.py OUT.jsonl SIZE_MB [--seed N] [--cwd DIR] [--spaced]

The file is what a long coding session leaves behind: a header, a model and
thinking-level change, then turns of a user message, an assistant message
with thinking and a `read` tool call, the tool result (source text of about
40 KB with quotes, backslashes, tabs and some non-ASCII characters), and an
assistant answer. Every 40 turns a short side branch is abandoned (two
entries off an earlier assistant message, then a `branch_summary`, and the
main line goes on from where it forked), every 25 turns a label, every 100
a model change and a `session_info`. The leaf is the last entry, on the main
line, so `get_messages` returns nearly the whole file. Same seed and size,
same bytes. `--spaced` writes the same entries with JSON spacing (`", "` and
`": "`), as other tools and editors write JSON.
"""

import argparse
import json
import random
import sys
import time

WORDS = ("let mut fn impl struct self return match Some None Ok Err async await pub use crate map iter "
         "collect into from len push value entry record index session parse write read buffer line").split()
EXTRA_CHARS = ["é", "ß", "→", "“", "”", "日本", "\\", "\"", "\t"]


def line_pool(rng, count=4096):
    """Source-like lines the tool results are cut from."""
    pool = []
    for n in range(count):
        indent = "    " * rng.randint(0, 3)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        if rng.random() < 0.15:
            words += f' "{rng.choice(WORDS)} {rng.choice(EXTRA_CHARS)}"'
        if rng.random() < 0.05:
            words += " // " + rng.choice(EXTRA_CHARS) + " note"
        pool.append(f"{indent}{words};")
    return pool


def source_text(rng, pool, size):
    """About `size` bytes of numbered source lines."""
    start = rng.randrange(len(pool))
    lines, total, n = [], 0, 0
    while total < size:
        line = f"{n + 1:5}\t{pool[(start + n) % len(pool)]}"
        n += 1
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


class Generator:
    def __init__(self, seed, cwd):
        self.rng = random.Random(seed)
        self.cwd = cwd
        self.clock_ms = 1_767_225_600_000  # 2026-01-01T00:00:00Z
        self.ids = set()
        self.call = 0
        self.pool = line_pool(self.rng)

    def tick(self, ms=None):
        self.clock_ms += ms if ms is not None else self.rng.randint(5, 4000)
        return self.clock_ms

    def iso(self):
        secs, ms = divmod(self.clock_ms, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ms:03d}Z"

    def new_id(self):
        while True:
            i = f"{self.rng.getrandbits(32):08x}"
            if i not in self.ids:
                self.ids.add(i)
                return i

    def entry(self, kind, parent, **fields):
        self.tick()
        e = {"type": kind, "id": self.new_id(), "parentId": parent, "timestamp": self.iso()}
        e.update(fields)
        return e

    def usage(self, inp, out):
        return {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0,
                "totalTokens": inp + out,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0,
                         "totalFromProvider": False}}

    def assistant(self, content, stop):
        self.call += 1
        return {"role": "assistant", "content": content, "api": "openai-completions", "provider": "bench",
                "model": "m", "usage": self.usage(self.rng.randint(1000, 90000), self.rng.randint(10, 900)),
                "stopReason": stop, "timestamp": self.tick(), "responseId": f"chatcmpl-{self.call}",
                "rawStopReason": "tool_calls" if stop == "toolUse" else "stop",
                "durationMs": self.rng.randint(100, 9000), "thinkingLevel": "medium"}

    def user(self, text):
        return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": self.tick()}

    def sentence(self, lo, hi):
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi)))

    def turn(self, parent, n):
        """The four entries of one turn; returns them and the new leaf id."""
        out = []
        u = self.entry("message", parent, message=self.user(f"turn {n}: {self.sentence(8, 40)}"))
        call_id = f"call_{n}_{self.rng.getrandbits(24):06x}"
        path = f"src/module_{self.rng.randint(0, 400)}.rs"
        a1 = self.entry("message", u["id"], message=self.assistant(
            [{"type": "thinking", "thinking": self.sentence(20, 120)},
             {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": path}}], "toolUse"))
        body = source_text(self.rng, self.pool, self.rng.randint(30_000, 50_000))
        r = self.entry("message", a1["id"], message={
            "role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": [{"type": "text", "text": body}], "isError": False, "timestamp": self.tick()})
        a2 = self.entry("message", r["id"], message=self.assistant(
            [{"type": "text", "text": self.sentence(30, 300)}], "stop"))
        out += [u, a1, r, a2]
        return out, a2["id"]


def generate(out, size_bytes, seed=1, cwd="/tmp/bench", spaced=False):
    """Write a session of about `size_bytes` to the file object `out` (text); returns the entry count."""
    g = Generator(seed, cwd)
    written, count = 0, 0
    separators = (", ", ": ") if spaced else (",", ":")

    def emit(record):
        nonlocal written, count
        line = json.dumps(record, ensure_ascii=False, separators=separators) + "\n"
        out.write(line)
        written += len(line.encode())
        count += 1

    emit({"type": "session", "version": 3, "id": f"0190f000-0000-7000-8000-{seed:012d}", "timestamp": g.iso(),
          "cwd": cwd})
    count = 0
    e = g.entry("model_change", None, provider="bench", modelId="m")
    emit(e)
    leaf = e["id"]
    e = g.entry("thinking_level_change", leaf, thinkingLevel="medium")
    emit(e)
    leaf = e["id"]
    n = 0
    while written < size_bytes:
        n += 1
        entries, new_leaf = g.turn(leaf, n)
        for e in entries:
            emit(e)
        if n % 40 == 0:
            # An abandoned side branch off the assistant answer, then its summary.
            side_user = g.entry("message", new_leaf, message=g.user("side question " + g.sentence(5, 20)))
            side_answer = g.entry("message", side_user["id"],
                                  message=g.assistant([{"type": "text", "text": g.sentence(20, 80)}], "stop"))
            emit(side_user)
            emit(side_answer)
            summary = g.entry("branch_summary", new_leaf, fromId=side_answer["id"],
                              summary="The side question was answered: " + g.sentence(10, 40),
                              details={"readFiles": [], "modifiedFiles": []})
            emit(summary)
            new_leaf = summary["id"]
        if n % 25 == 0:
            e = g.entry("label", new_leaf, targetId=entries[0]["id"], label=f"checkpoint {n}")
            emit(e)
            new_leaf = e["id"]
        if n % 100 == 0:
            e = g.entry("model_change", new_leaf, provider="bench", modelId="m")
            emit(e)
            e2 = g.entry("session_info", e["id"], name=f"bench session, turn {n}")
            emit(e2)
            new_leaf = e2["id"]
        leaf = new_leaf
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("size_mb", type=float)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cwd", default="/tmp/bench")
    parser.add_argument("--spaced", action="store_true", help="JSON spacing: \", \" and \": \"")
    args = parser.parse_args()
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        count = generate(f, int(args.size_mb * 1024 * 1024), args.seed, args.cwd, args.spaced)
    print(f"{args.out}: {count} entries", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
