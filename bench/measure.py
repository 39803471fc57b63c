"""Process measurements for the benchmarks: an agent process driven over
stdin/stdout, its peak RSS, its CPU time and context switches, read from
/proc while it runs.

CPU is the sum over the process's threads of the scheduler's on-CPU time
(`se.sum_exec_runtime` in /proc/<pid>/task/*/sched, nanosecond precision;
`utime+stime` would only have 10 ms ticks); a figure is the difference
between two samples, so start-up and exit are not counted in it. Threads
that end between two samples are lost from the difference, so the
rusage of the whole process (utime+stime, from wait4) is kept too.
"""

import collections
import os
import select
import statistics
import subprocess
import time


def sandbox_env(agent_dir, extra=None):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR")}
    env["HOME"] = agent_dir
    env["PI_CODING_AGENT_DIR"] = agent_dir
    env["RUST_LOG"] = "error"
    env.update(extra or {})
    return env


def peak_rss_kib(pid):
    """VmHWM of a live process (peak resident set since its exec), in KiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Usage:
    """On-CPU seconds and context switches of a process's live threads."""

    def __init__(self, cpu=0.0, voluntary=0, involuntary=0):
        self.cpu, self.voluntary, self.involuntary = cpu, voluntary, involuntary

    def __sub__(self, other):
        return Usage(self.cpu - other.cpu, self.voluntary - other.voluntary, self.involuntary - other.involuntary)

    @staticmethod
    def of(pid):
        total = Usage()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return total
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/sched") as f:
                    for line in f:
                        key, _, value = line.partition(":")
                        key = key.strip()
                        if key == "se.sum_exec_runtime":
                            total.cpu += float(value) / 1000.0
                        elif key == "nr_voluntary_switches":
                            total.voluntary += int(value)
                        elif key == "nr_involuntary_switches":
                            total.involuntary += int(value)
            except (OSError, ValueError):
                continue
        return total


class Agent:
    """An agent process speaking JSONL on stdin/stdout.

    Output is read in large chunks; only the first bytes of each line are
    kept (enough to classify it) plus its length, so reading a 100 MB reply
    costs the reader little."""

    HEAD = 1024

    def __init__(self, cmd, env, cwd, stderr=subprocess.DEVNULL):
        # The wall clock at spawn, for timestamps the agent logs (`stderr`: a file).
        self.wall_start = time.time()
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     env=env, cwd=cwd, bufsize=0)
        self.fd = self.proc.stdout.fileno()
        self.pending = bytearray()  # head of the line being read
        self.pending_len = 0
        self.lines = collections.deque()  # (head, length) of complete lines not yet taken
        self.eof = False

    @property
    def pid(self):
        return self.proc.pid

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _fill(self, timeout):
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            raise SystemExit(f"no output from {self.proc.args[0]} for {timeout} s")
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            self.eof = True
            return
        pos = 0
        while True:
            nl = chunk.find(b"\n", pos)
            end = len(chunk) if nl < 0 else nl
            room = self.HEAD - len(self.pending)
            if room > 0:
                self.pending += chunk[pos:min(end, pos + room)]
            self.pending_len += end - pos
            if nl < 0:
                break
            self.lines.append((bytes(self.pending), self.pending_len))
            self.pending = bytearray()
            self.pending_len = 0
            pos = nl + 1

    def line(self, timeout=120):
        """The next line's head and full length; None at end of output."""
        while not self.lines:
            if self.eof:
                return None
            self._fill(timeout)
        return self.lines.popleft()

    def count(self, marker, n, timeout=120):
        """Read until `marker` (bytes) has occurred `n` times in the output, counting in
        C over whole chunks (`bytes.count`) rather than line by line in Python, so the
        reading costs little next to the agent's own work (the 10,000-`get_state`
        burst: ~5 ms of this script's CPU instead of ~15 ms). Lines already split by
        `line()`/`until()` must have been taken first. The rest of the output is kept
        for `close()`, which drains it."""
        if self.lines or self.pending:
            raise ValueError("count() after a partly read line")
        seen, tail = 0, b""
        while seen < n:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                raise SystemExit(f"no output from {self.proc.args[0]} for {timeout} s")
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.eof = True
                break
            window = tail + chunk
            seen += window.count(marker)
            # A marker cut by the chunk's end is counted with the next chunk.
            tail = window[-(len(marker) - 1):]
        return seen

    def until(self, predicate, timeout=120):
        """Read lines until one satisfies `predicate(head)`; returns (head, length, seconds since spawn)."""
        while True:
            item = self.line(timeout)
            if item is None:
                raise SystemExit(f"{self.proc.args[0]}: output ended early")
            if predicate(item[0]):
                return item[0], item[1], time.perf_counter() - self.start

    def rss_kib(self):
        return peak_rss_kib(self.proc.pid)

    def usage(self):
        return Usage.of(self.proc.pid)

    def close(self):
        """Close stdin, drain the output, reap; returns the whole run's utime+stime (seconds)."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        while not self.eof:
            self._fill(120)
        _, status, rusage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        return rusage.ru_utime + rusage.ru_stime


def is_response(head, command=None):
    if not head.startswith(b'{"type":"response"'):
        return False
    return command is None or f'"command":"{command}"'.encode() in head


class Figure:
    """Repeated samples of one figure: median and range."""

    def __init__(self, samples):
        self.samples = list(samples)

    @property
    def median(self):
        return statistics.median(self.samples)

    def fmt(self, scale=1.0, unit="", digits=0):
        m = self.median * scale
        if len(self.samples) == 1:
            return f"{m:,.{digits}f}{unit}"
        lo, hi = min(self.samples) * scale, max(self.samples) * scale
        return f"{m:,.{digits}f}{unit} ({lo:,.{digits}f}–{hi:,.{digits}f})"
