// The Node.js client example of seed 004 (section 21.8.1), re-indented where
// the seed text lost its indentation, otherwise unchanged. It is TypeScript:
// run it with node 22's --experimental-strip-types.
import { spawn } from "node:child_process";

const pi = spawn("pi", ["--mode", "rpc"], { stdio: ["pipe", "pipe", "inherit"] });

let buffer = "";
pi.stdout.on("data", (data) => {
    buffer += data.toString();
    const lines = buffer.split("\n");
    buffer = lines.pop() || "";
    for (const line of lines) {
        if (line.trim()) {
            const message = JSON.parse(line);
            handleMessage(message);
        }
    }
});

function send(method: string, params: object, id?: number) {
    const msg = { jsonrpc: "2.0", method, params, ...(id ? { id } : {}) };
    pi.stdin.write(JSON.stringify(msg) + "\n");
}

function handleMessage(message: any) {
    if (message.method === "assistantMessage") {
        process.stdout.write(message.params.delta || "");
    } else if (message.method === "turnEnd") {
        console.log("\n--- Turn complete ---");
    }
}

// Initialize
send("initialize", {
    cwd: process.cwd(),
    model: "claude-sonnet-4",
}, 1);

// Send prompt after initialization
setTimeout(() => {
    send("prompt", { content: "List files in the current directory" }, 2);
}, 1000);
