#!/usr/bin/env python3
"""What Amazon Bedrock's AWS credential code (`aws-config` and the chain
around it) costs pi-rpc at start-up: cold start to the first `get_state`
answer and peak RSS there, without Bedrock, and with a Bedrock model
selected and each kind of AWS credential configured (static keys in the
environment, a shared-credentials profile, a `role_arn` profile, which only
`aws-config` resolves). The credentials are resolved at the first model
call, never before the first `get_state`; `--strace` also checks that no
AWS file is opened before that answer.

Usage: bench/aws_startup.py [--pi target/release/pi] [--repeat 20] [--strace]
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from measure import Agent, Figure, is_response, sandbox_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "amazon-bedrock/amazon.nova-2-lite-v1:0"


def aws_files(home):
    aws = os.path.join(home, ".aws")
    os.makedirs(aws, exist_ok=True)
    with open(os.path.join(aws, "credentials"), "w") as f:
        f.write("[bench]\naws_access_key_id = AKIDBENCH\naws_secret_access_key = secret\n")
    with open(os.path.join(aws, "config"), "w") as f:
        f.write("[profile bench]\nregion = us-west-2\n"
                "[profile bench-role]\nrole_arn = arn:aws:iam::123456789012:role/bench\n"
                "source_profile = bench\nregion = us-west-2\n")
    return aws


def cases(aws):
    files = {"AWS_CONFIG_FILE": os.path.join(aws, "config"),
             "AWS_SHARED_CREDENTIALS_FILE": os.path.join(aws, "credentials")}
    return [
        ("no Bedrock (default model)", [], {}),
        ("control: an Anthropic model, key in the environment", ["--model", "anthropic/claude-fable-5"],
         {"ANTHROPIC_API_KEY": "sk-ant-bench"}),
        ("Bedrock, keys in the environment", ["--model", MODEL],
         {"AWS_ACCESS_KEY_ID": "AKIDBENCH", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-west-2"}),
        ("Bedrock, shared-credentials profile", ["--model", MODEL], {"AWS_PROFILE": "bench", **files}),
        ("Bedrock, role_arn profile (aws-config)", ["--model", MODEL], {"AWS_PROFILE": "bench-role", **files}),
    ]


def once(pi, args, env, cwd):
    agent = Agent([pi, "--mode", "rpc", "--no-session", *args], env, cwd)
    agent.send(b'{"type":"get_state"}\n')
    _, _, elapsed = agent.until(is_response)
    rss = agent.rss_kib()
    agent.close()
    return elapsed, rss


def aws_files_opened(pi, args, env, cwd):
    """AWS files the process opens before it answers the first get_state."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        cmd = ["strace", "-f", "-e", "trace=openat,open,stat,newfstatat,statx", "-o", log.name,
               pi, "--mode", "rpc", "--no-session", *args]
        proc = subprocess.run(cmd, input=b'{"type":"get_state"}\n', capture_output=True, env=env, cwd=cwd,
                              timeout=60)
        assert b'"get_state"' in proc.stdout, proc.stdout[:200]
        return sorted({line.split('"')[1] for line in log.read().splitlines()
                       if '"' in line and "/.aws/" in line})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pi", default=os.path.join(ROOT, "target", "release", "pi"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--strace", action="store_true")
    opts = ap.parse_args()
    print(f"binary: {opts.pi}, {os.path.getsize(opts.pi):,} bytes; load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as cwd:
        aws = aws_files(home)
        for label, args, extra in cases(aws):
            env = sandbox_env(home, extra)
            once(opts.pi, args, env, cwd)  # warm the page cache
            samples = [once(opts.pi, args, env, cwd) for _ in range(opts.repeat)]
            times, rss = Figure(s[0] for s in samples), Figure(s[1] for s in samples)
            line = (f"{label}: first get_state {times.fmt(1000, ' ms', 2)}, peak RSS {rss.fmt(1 / 1024, ' MiB', 1)} "
                    f"({opts.repeat} runs, load {os.getloadavg()[0]:.2f})")
            if opts.strace:
                line += f"; AWS files opened in a run that answers get_state and exits: {aws_files_opened(opts.pi, args, env, cwd) or 'none'}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
