#!/usr/bin/env python3
"""Regenerate adapters/cli/startup-order.txt: the functions a start of `pi` runs.

The `pi` binary is linked with these functions placed together
(by a linker script made from this list, see adapters/cli/build.rs), so a start maps a
few 64 KB windows of code instead of half the binary. This script:
1. builds the release `pi` with its symbols (the same code as the product);
2. installs valgrind into target/tools/valgrind (Debian package, unpacked);
3. runs a few typical starts under callgrind (native and JSON-RPC first
   records, with and without a configured provider, in-memory and on-disk
   sessions, with bench/run.py's MCP servers and TypeScript extension), each
   dumped when its first records are answered, then run to its end;
4. writes every function of the binary those runs executed, mangled, one per line:
   first those run before the answers (each start's new ones in address
   order), then those run after them (the same way), so the code of the
   first answer fills as few windows as it can: the functions holding an executed
   instruction (`--dump-instr=yes`) by the binary's symbol table (`nm`), not
   callgrind's function names, which leave out the code it files under an
   unknown object (`ob=???`: most of a fat-LTO `pi`'s code);
   a name whose hash-free pattern (adapters/cli/build.rs: crate and symbol
   hashes left out, so the order holds for any build of `pi`) matches more
   than a few functions of the binary (a generic with many instances) is
   written `=name`: matched exactly, not by its pattern.

Run it after changes to start-up code or dependency updates (a stale list
only loses part of the gain: names that no longer exist are skipped).
The `=` names carry this build's symbol hashes, which depend on the features
cargo resolved: the committed list comes from the build the benchmarks are
measured on, `cargo build --release -p pi-cli` alone (bench/run.py's build),
made symbolised by `cargo rustc --release -p pi-cli --bin pi -- -C strip=none`
(what this script runs; or put such a binary at target/startup-order/pi and
pass --no-build); a build with other features (in the same command as
`-p pi-compat`, or workspace-wide) misses the exact names and gets those
instances from the fallback patterns (build.rs).
(Why: pi-compat's dependencies turn on other features, such as pi-transport's
`schemas`, so every crate above them gets other hashes and none of the `=` names
matches.) Set STARTUP_ORDER_RUNS=FILE to also write each start's functions
(before, after its answers) as JSON.
The `=` names also change when any crate at or below pi-provider changes its
dependencies (cargo's `-C metadata` of a crate hashes its dependencies', so
that crate and every crate above it get new ids, and a legacy symbol hash of a
generic instance covers the ids of its types and of the crate instantiating
it): 86c7775 (one new dependency of pi-provider) left 111 of 428 matching and
start RSS went 5.6 -> 6.7 MiB. `--check` tells whether a symbolised build still
matches the committed list.
Usage: bench/startup_order.py [--no-build]
       bench/startup_order.py --mark BINARY   (only re-mark the list's `=` names from BINARY's symbols)
       bench/startup_order.py --check BINARY  (how many of the list's `=` names BINARY's symbols hold)
"""

import bisect
import glob
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run  # noqa: E402  (bench/run.py: the MCP servers of its start-up figure)
TOOLS = os.path.join(ROOT, "target", "tools", "valgrind")
OUT = os.path.join(ROOT, "adapters", "cli", "startup-order.txt")
BINARY = os.path.join(ROOT, "target", "startup-order", "pi")

STARTS = [
    # (first records, provider configured, in-memory session, extras: "mcp" for bench/run.py's 3 MCP
    # servers, "extension" for its one TypeScript extension)
    ([{"type": "get_state"}], False, True, ()),
    ([{"type": "get_state"}], True, True, ()),
    # The extension's start before the MCP one: under callgrind the MCP start's 50 ms cap passes before
    # its first answer, so its "before the answer" part holds the servers' spawn (rmcp, processes) that a
    # native start runs after it; placed first, that code would sit between the extension's and the rest.
    # Both before the on-disk session and JSON-RPC starts: layout model on d48129a's build, 64 KiB windows
    # to the first answer: extension 26 -> 24, 3 MCP 26 -> 24, JSON-RPC 19 -> 21, plain 16 and
    # provider 17 unchanged.
    ([{"id": "s", "type": "get_state"}], False, True, ("extension",)),
    ([{"type": "get_state"}], False, True, ("mcp",)),
    ([{"type": "get_state"}, {"type": "get_messages"}], True, False, ()),
    ([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
      {"jsonrpc": "2.0", "id": 2, "method": "getState"}], True, True, ()),
]
EXTENSION = os.path.join(ROOT, "target/tools/reference/node_modules/@earendil-works/pi-coding-agent/examples/"
                               "extensions/rpc-demo.ts")
HOST = os.path.join(ROOT, "target/tools/extension-host")


def build():
    subprocess.run(["cargo", "rustc", "--release", "-q", "-p", "pi-cli", "--bin", "pi", "--", "-C", "strip=none"],
                   cwd=ROOT, check=True)
    os.makedirs(os.path.dirname(BINARY), exist_ok=True)
    subprocess.run(["cp", os.path.join(ROOT, "target", "release", "pi"), BINARY], check=True)


def valgrind():
    """The system's valgrind if there is one, else the Debian package unpacked into target/tools/valgrind."""
    system = shutil.which("valgrind")
    if system:
        return system
    exe = os.path.join(TOOLS, "usr", "bin", "valgrind")
    if not os.path.exists(exe):
        os.makedirs(TOOLS, exist_ok=True)
        subprocess.run(["apt-get", "download", "valgrind"], cwd=TOOLS, check=True, stderr=subprocess.DEVNULL)
        deb = glob.glob(os.path.join(TOOLS, "valgrind_*.deb"))[0]
        subprocess.run(["dpkg", "-x", deb, TOOLS], check=True)
    return exe


def answered(line):
    """Whether an output line answers one of the records (native `response`, JSON-RPC `result`/`error`)."""
    if b'"type":"response"' in line:
        return True
    return b'"jsonrpc"' in line and b'"id"' in line and (b'"result"' in line or b'"error"' in line)


def functions_run(exe, records, provider, in_memory, extras):
    """Mangled names of the binary's functions one start executed before its records were answered, and
    those it executed after (each in address order)."""
    with tempfile.TemporaryDirectory() as home:
        servers = run.mcp_servers() if "mcp" in extras else None
        if servers is not None:
            with open(os.path.join(home, "mcp.json"), "w") as f:
                json.dump(servers, f)
        if provider:
            models = {"providers": {"bench": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                                              "apiKey": "k", "models": [{"id": "m"}]}}}
            with open(os.path.join(home, "models.json"), "w") as f:
                json.dump(models, f)
        out = os.path.join(home, "callgrind.out")
        env = dict(os.environ, HOME=home, PI_CODING_AGENT_DIR=home)
        if exe.startswith(TOOLS):
            env["VALGRIND_LIB"] = os.path.join(TOOLS, "usr", "libexec", "valgrind")
        args = [exe, "--tool=callgrind", "--dump-instr=yes", "--compress-pos=no", "--compress-strings=no",
                f"--callgrind-out-file={out}", BINARY, "--mode", "rpc"]
        if in_memory:
            args.append("--no-session")
        if "extension" in extras:
            args += ["-e", EXTENSION]
            env.update(PI_RPC_EXTENSION_HOST_DIR=HOST, PI_RPC_NODE=run.DEFAULT_NODE)
        stdin = "".join(json.dumps(r) + "\n" for r in records).encode()
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, cwd=home)
        proc.stdin.write(stdin)
        proc.stdin.flush()
        pending, answers = b"", 0
        while answers < len(records):
            ready, _, _ = select.select([proc.stdout], [], [], 300)
            chunk = os.read(proc.stdout.fileno(), 1 << 16) if ready else b""
            if not chunk:
                raise SystemExit(f"no answer to {records} under callgrind")
            pending += chunk
            *lines, pending = pending.split(b"\n")
            answers += sum(1 for line in lines if answered(line))
        # The counts so far go to `<out>.1` (and are reset); the rest of the run to `out`.
        control = os.path.join(os.path.dirname(exe), "callgrind_control")
        subprocess.run([control, "--dump", str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
        while not os.path.exists(out + ".1"):
            time.sleep(0.05)
        proc.stdin.close()
        while os.read(proc.stdout.fileno(), 1 << 16):
            pass
        if proc.wait(timeout=300) != 0:
            raise SystemExit(f"{records}: exit status {proc.returncode} under callgrind")
        ranges, symbols = code_ranges(BINARY), function_symbols(BINARY)
        return (functions_at(executed_addresses(out + ".1", ranges), symbols),
                functions_at(executed_addresses(out, ranges), symbols))


def code_ranges(binary):
    """(start, end) of the binary's executable segments (`pi` is linked at a fixed address)."""
    text = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout
    ranges = []
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["LOAD"] and "E" in parts[6:-1]:
            start, size = int(parts[2], 16), int(parts[5], 16)
            ranges.append((start, start + size))
    return ranges


def executed_addresses(path, ranges):
    """Addresses of the executed instructions in `ranges`, from a callgrind file written with
    `--dump-instr=yes --compress-pos=no` (one `0x<address> <cost>` line per instruction)."""
    found = set()
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("0x"):
                address = int(line.split(maxsplit=1)[0], 16)
                if any(start <= address < end for start, end in ranges):
                    found.add(address)
    return found


def function_symbols(binary):
    """(address, end, mangled name) of the binary's function symbols, by address."""
    text = subprocess.run(["nm", "-n", "-S", "--defined-only", binary], capture_output=True, text=True,
                          check=True).stdout
    symbols = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            address, size = int(parts[0], 16), int(parts[1], 16)
            if size and not (symbols and symbols[-1][0] == address):  # one name for aliases
                symbols.append((address, address + size, parts[3]))
    return symbols


def functions_at(addresses, symbols):
    """The functions holding `addresses`, in address order."""
    starts = [s[0] for s in symbols]
    names = {}
    for address in sorted(addresses):
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < symbols[i][1]:
            names.setdefault(symbols[i][0], symbols[i][2])
    return [names[a] for a in sorted(names)]


# A hash-free pattern matching more functions than this is matched exactly instead.
MAX_INSTANCES = 4


def hash_free(name):
    """The pattern adapters/cli/build.rs makes of `name` (same rules), as a regular expression."""
    name = re.sub(r"((\.llvm)?\.\d+)+$", "", name)
    out, i = [], 0
    while i < len(name):
        legacy = re.match(r"17h[0-9a-fA-F]{16}E", name[i:])
        if legacy:
            out.append("17h.*E")
            i += legacy.end()
            continue
        crate = re.match(r"Cs[0-9A-Za-z]*_", name[i:]) or (name.startswith("_R") and re.match(r"B[0-9A-Za-z]*_", name[i:]))
        if crate:
            out.append(re.escape(crate.group(0)[0:2 if crate.group(0).startswith("Cs") else 1]) + ".*_")
            i += crate.end()
            continue
        out.append(re.escape(name[i]))
        i += 1
    return "".join(out)


def mark_generic(order, binary):
    """`=name` for the names whose hash-free pattern matches more than MAX_INSTANCES functions of `binary`."""
    text = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    symbols = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            name = re.sub(r"((\.llvm)?\.\d+)+$", "", parts[2])
            symbols.setdefault(name[:12], []).append(name)
    marked = []
    for name in order:
        name = name.lstrip("=")
        pattern = re.compile(hash_free(name) + r"\Z")
        instances = sum(1 for s in symbols.get(name[:12], ()) if pattern.match(s))
        marked.append("=" + name if instances > MAX_INSTANCES else name)
    return marked


def check(binary):
    """How many of the list's `=` names (exact, LTO suffixes aside) are in `binary`'s symbol table."""
    text = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    suffix = re.compile(r"((\.llvm)?\.\d+)+$")
    names = {suffix.sub("", line.split()[2]) for line in text.splitlines() if len(line.split()) == 3}
    with open(OUT) as f:
        exact = [suffix.sub("", line.strip()[1:]) for line in f if line.startswith("=")]
    found = sum(1 for name in exact if name in names)
    print(f"{found} of {len(exact)} '=' names of {os.path.relpath(OUT, ROOT)} are in {binary}"
          + ("" if found >= len(exact) * 0.95 else ": regenerate the list from a symbolised build of this tree"))


def main():
    if "--check" in sys.argv:
        check(sys.argv[sys.argv.index("--check") + 1])
        return
    if "--mark" in sys.argv:
        binary = sys.argv[sys.argv.index("--mark") + 1]
        with open(OUT) as f:
            order = [line.strip() for line in f if line.strip()]
        order = mark_generic(order, binary)
        with open(OUT, "w") as f:
            f.write("".join(name + "\n" for name in order))
        print(f"{sum(n.startswith('=') for n in order)} of {len(order)} names matched exactly")
        return
    if "--no-build" not in sys.argv:
        build()
    exe = valgrind()
    runs = [functions_run(exe, records, provider, in_memory, extras)
            for records, provider, in_memory, extras in STARTS
            if "extension" not in extras or (os.path.exists(EXTENSION) and os.path.isdir(HOST))]
    if os.environ.get("STARTUP_ORDER_RUNS"):  # each start's functions (before, after), for study
        with open(os.environ["STARTUP_ORDER_RUNS"], "w") as f:
            json.dump(runs, f)
    seen, order = set(), []
    for phase in (0, 1):  # every start's code of its first answers, then the code run after them
        for names in runs:
            for name in names[phase]:
                if name not in seen:
                    seen.add(name)
                    order.append(name)
    order = mark_generic(order, BINARY)
    with open(OUT, "w") as f:
        f.write("".join(name + "\n" for name in order))
    print(f"{len(order)} functions -> {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
