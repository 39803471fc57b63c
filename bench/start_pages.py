#!/usr/bin/env python3
"""Where a start's resident memory is: at the first `get_state` answer (as bench/run.py's start figure), the
resident KiB of each ELF section of the `pi` binary and of each other mapping (libraries, heap, stacks), from
/proc/PID/maps and /proc/PID/pagemap; and, when run as root, the page-cache folio sizes of the binary's resident
pages (/proc/kpageflags): the kernel maps every folio a 64 KiB fault-around window touches, so the same binary
starts with more resident code when its file is held in large folios (a `cp` of it) than in 4 KiB pages (the file
lld wrote, or one read back from disk). See adapters/cli/build.rs and README ("build scripts").

Usage: bench/start_pages.py [--evict] [--runs N] [--mcp | --extension] BINARY
  --evict      drop BINARY from the page cache first (posix_fadvise), so one start reads it back in 4 KiB pages
  --mcp        with bench/run.py's three MCP servers configured (as its "3 MCP servers" start figure)
  --extension  with its one TypeScript extension (rpc-demo.ts), measured as its extension figure: once the
               `get_state` is answered and the extension's `setTitle` request is out
"""

import collections
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from measure import Agent, sandbox_env  # noqa: E402
import run  # noqa: E402

PAGE = 4096
EXTENSION = os.path.join(run.ROOT, "target/tools/reference/node_modules/@earendil-works/pi-coding-agent/examples/"
                                   "extensions/rpc-demo.ts")
HOST = os.path.join(run.ROOT, "target/tools/extension-host")


def sections(binary):
    """(start, end, name) of the binary's allocated sections (`pi` is linked at a fixed address)."""
    text = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in text.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 6 and parts[0].startswith("[") and parts[1].startswith("."):
            address, size = int(parts[3], 16), int(parts[5], 16)
            if address:
                found.append((address, address + size, parts[1]))
    return sorted(found)


def resident(pid, binary, secs):
    """Resident KiB by place, and the folio size (in pages) of each resident page of the binary."""
    per, folios = collections.Counter(), collections.Counter()
    kpageflags = open("/proc/kpageflags", "rb") if os.access("/proc/kpageflags", os.R_OK) else None
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            low, high = (int(x, 16) for x in fields[0].split("-"))
            path = fields[5] if len(fields) > 5 else "[anonymous]"
            ours = os.path.realpath(path) == os.path.realpath(binary)
            pagemap.seek(low // PAGE * 8)
            try:
                entries = pagemap.read((high - low) // PAGE * 8)
            except OSError:
                continue
            run = None
            for i in range(len(entries) // 8):
                (entry,) = struct.unpack_from("<Q", entries, i * 8)
                if not entry >> 63 & 1:
                    continue
                address = low + i * PAGE
                place = os.path.basename(path)
                if ours:
                    place = "pi " + next((n for s, e, n in secs if s < address + PAGE and address < e), "?")
                per[f"{place} {fields[1]}"] += PAGE // 1024
                pfn = entry & ((1 << 55) - 1)
                if ours and kpageflags and pfn:
                    kpageflags.seek(pfn * 8)
                    (flags,) = struct.unpack("<Q", kpageflags.read(8))
                    head, tail = flags >> 15 & 1, flags >> 16 & 1
                    if head or not tail:
                        if run:
                            folios[run[0]] += 1
                        run = [1] if head else None
                        if not head:
                            folios[1] += 1
                    elif run:
                        run[0] += 1
            if run:
                folios[run[0]] += 1
    return per, folios


def main():
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 3
    binary = os.path.abspath(args[-1])
    if "--evict" in args:
        fd = os.open(binary, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    secs = sections(binary)
    for start in range(runs + 1):  # the first start warms the page cache
        with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
            cmd, extra = [binary, "--mode", "rpc", "--no-session"], {}
            if "--mcp" in args:
                with open(os.path.join(agent_dir, "mcp.json"), "w") as f:
                    json.dump(run.mcp_servers(), f)
            if "--extension" in args:
                cmd += ["-e", EXTENSION]
                extra = {"PI_RPC_EXTENSION_HOST_DIR": HOST, "PI_RPC_NODE": run.DEFAULT_NODE}
            agent = Agent(cmd, sandbox_env(agent_dir, extra), cwd)
            agent.send(b'{"type":"get_state"}\n')
            waiting = {b'"type":"response"'} | ({b'"method":"setTitle"'} if "--extension" in args else set())
            while waiting:
                head, _, _ = agent.until(lambda h: True)
                waiting = {w for w in waiting if w not in head}
            peak = agent.rss_kib()
            per, folios = resident(agent.proc.pid, binary, secs)
            agent.close()
        if start:
            print(f"start {start}: peak RSS {peak} KiB, resident now {sum(per.values())} KiB")
    for place, kib in per.most_common():
        print(f"{kib:8d} KiB  {place}")
    if folios:
        sizes = ", ".join(f"{n} x {size * 4} KiB" for size, n in sorted(folios.items()))
        print(f"the binary's resident pages are in folios of: {sizes} (the last start's)")


if __name__ == "__main__":
    main()
