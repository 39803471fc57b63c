# The Python client example of seed 004 (section 21.8.2), re-indented where
# the seed text lost its indentation, otherwise unchanged.
import subprocess
import json

def send(proc, method, params, msg_id=None):
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        msg["id"] = msg_id
    proc.stdin.write(json.dumps(msg) + "\n")
    proc.stdin.flush()

def read_message(proc):
    line = proc.stdout.readline()
    return json.loads(line)

pi = subprocess.Popen(
    ["pi", "--mode", "rpc"],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
)

# Initialize
send(pi, "initialize", {"cwd": ".", "model": "claude-sonnet-4"}, 1)
resp = read_message(pi)
print("Initialized:", resp)

# Send prompt
send(pi, "prompt", {"content": "Hello!"}, 2)

# Read events
while True:
    msg = read_message(pi)
    if msg.get("method") == "assistantMessage":
        params = msg["params"]
        if params.get("type") == "delta":
            print(params["delta"], end="", flush=True)
        elif params.get("type") == "complete":
            print("\n[Complete]")
    elif msg.get("method") == "turnEnd":
        break
