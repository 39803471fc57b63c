// N clients of `pi serve` at once (node's `ws`, seed JSON-RPC): each
// initializes its own session and prompts, all together, with a login whose
// token needs a refresh; every prompt must be answered. tests/e2e/oauth.rs
// starts the server and counts the refreshes the fake OAuth server saw.
//
// Usage: PI_WS_DIR=… node serve_sessions.mjs URL N
// Prints "ok N" and the distinct bearer-less answers on success.

import { createRequire } from "node:module";

const require = createRequire(process.env.PI_WS_DIR + "/package.json");
const WebSocket = require("ws");
const [url, count] = [process.argv[2], Number(process.argv[3])];

function session(i) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const timer = setTimeout(() => reject(new Error(`session ${i}: timed out`)), 60_000);
    let answer = "";
    ws.on("error", reject);
    ws.on("open", () => ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })));
    ws.on("message", (data) => {
      const msg = JSON.parse(data.toString());
      if (msg.error) return reject(new Error(`session ${i}: ${JSON.stringify(msg.error)}`));
      if (msg.id === 1) ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "prompt", params: { content: `hello ${i}` } }));
      if (msg.method === "assistantMessage" && msg.params.type === "complete") {
        if (msg.params.stopReason === "error") return reject(new Error(`session ${i}: ${msg.params.errorMessage}`));
        answer = msg.params.content;
      }
      if (msg.method === "turnEnd") {
        clearTimeout(timer);
        ws.close();
        resolve(answer);
      }
    });
  });
}

const answers = await Promise.all(Array.from({ length: count }, (_, i) => session(i)));
console.log(`ok ${answers.filter((a) => a.length > 0).length}`);
