// A `pi serve` client in node (the `ws` library) speaking the seed JSON-RPC
// dialect, one scenario per run; tests/e2e/serve.rs starts the server and
// runs each scenario, and fails when this exits non-zero.
//
// Usage: node jsonrpc_client.mjs SCENARIO URL
//   flows      initialize, prompt, numbered notifications, newSession,
//              resumeSession back with afterSeq, two clients at once
//   reconnect  drop the connection mid-run, resumeSession with afterSeq:
//              every missed delta exactly once
//   history    resume SESSION_ID (argument 3) and print its messages (the
//              scale-out test: the session continues on another worker)

import { createRequire } from "node:module";

// PI_WS_DIR: the directory `ws` was installed into (target/tools/ws).
const require = createRequire(process.env.PI_WS_DIR + "/package.json");
const WebSocket = require("ws");

const TIMEOUT = 30_000;

function check(cond, text) {
  if (!cond) throw new Error(text);
}

/** A connection with a queue of incoming messages and request helpers. */
class Client {
  static open(url) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const client = new Client(ws);
      ws.once("open", () => resolve(client));
      ws.once("error", reject);
    });
  }

  constructor(ws) {
    this.ws = ws;
    this.queue = [];
    this.waiters = [];
    this.nextId = 1;
    this.closed = false;
    ws.on("message", (data) => {
      this.queue.push(JSON.parse(data.toString()));
      this.waiters.splice(0).forEach((w) => w());
    });
    ws.on("close", () => {
      this.closed = true;
      this.waiters.splice(0).forEach((w) => w());
    });
  }

  async next() {
    const deadline = Date.now() + TIMEOUT;
    while (this.queue.length === 0) {
      check(!this.closed, "connection closed");
      check(Date.now() < deadline, "timed out waiting for a message");
      await new Promise((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
    return this.queue.shift();
  }

  async until(pred) {
    const seen = [];
    for (;;) {
      const msg = await this.next();
      seen.push(msg);
      if (pred(msg)) return seen;
    }
  }

  /** Send a request; returns [result, the notifications before the response]. */
  async call(method, params = {}) {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    const seen = await this.until((m) => m.id === id);
    const reply = seen.pop();
    check(!reply.error, `${method} failed: ${JSON.stringify(reply.error)}`);
    return [reply.result, seen];
  }

  close() {
    this.ws.close();
  }
}

const seqs = (msgs) => msgs.filter((m) => m.params && "seq" in m.params).map((m) => m.params.seq);
const deltas = (msgs) =>
  msgs.filter((m) => m.method === "assistantMessage" && m.params.type === "delta").map((m) => m.params.delta).join("");
const turnEnd = (m) => m.method === "turnEnd";

// Strictly increasing; not consecutive: an event this dialect does not show
// keeps its number all the same.
function increasing(numbers, what) {
  check(numbers.length > 0, `${what}: no numbered notifications`);
  for (let i = 1; i < numbers.length; i++) {
    check(numbers[i] > numbers[i - 1], `${what}: seq ${numbers[i - 1]} then ${numbers[i]} (lost order or a duplicate)`);
  }
}

async function promptToEnd(client, message) {
  await client.call("prompt", { message });
  return client.until(turnEnd);
}

async function flows(url) {
  const [a, b] = await Promise.all([Client.open(url), Client.open(url)]);
  const [[ia], [ib]] = await Promise.all([a.call("initialize", {}), b.call("initialize", {})]);
  check(ia.sessionId && ia.sessionId !== ib.sessionId, "two connections share a session");
  const [ea, eb] = await Promise.all([promptToEnd(a, "hello from A"), promptToEnd(b, "hello from B")]);
  check(deltas(ea).includes("hello from A") && !deltas(ea).includes("hello from B"), `A saw ${deltas(ea)}`);
  check(deltas(eb).includes("hello from B") && !deltas(eb).includes("hello from A"), `B saw ${deltas(eb)}`);
  increasing(seqs(ea), "session A");
  increasing(seqs(eb), "session B");
  const lastA = seqs(ea).at(-1);
  // A new session on the same connection, then back to the first with afterSeq.
  const [fresh] = await a.call("newSession", {});
  check(fresh.sessionId && fresh.sessionId !== ia.sessionId, `newSession: ${JSON.stringify(fresh)}`);
  const [state] = await a.call("getState");
  check(state.sessionId === fresh.sessionId, "not attached to the new session");
  const [back] = await a.call("resumeSession", { sessionId: ia.sessionId, afterSeq: lastA });
  check(back.sessionId === ia.sessionId && back.replayed === 0 && back.lastSeq === lastA, JSON.stringify(back));
  const [messages] = await a.call("getMessages");
  check(JSON.stringify(messages).includes("hello from A"), "history of A lost");
  // B drops; its session can be resumed by another connection.
  b.close();
  const c = await Client.open(url);
  const [resumed] = await c.call("resumeSession", { sessionId: ib.sessionId });
  check(resumed.sessionId === ib.sessionId, JSON.stringify(resumed));
  const [mb] = await c.call("getMessages");
  check(JSON.stringify(mb).includes("hello from B"), "history of B lost");
  // An unknown session is a clear error; the connection goes on.
  c.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 99, method: "resumeSession", params: { sessionId: "nope" } }));
  const err = (await c.until((m) => m.id === 99)).pop();
  check(err.error && err.error.message.includes("nope"), JSON.stringify(err));
  await c.call("getState");
  a.close();
  c.close();
  console.log(`flows ok: ${ia.sessionId} ${ib.sessionId}`);
}

async function reconnect(url) {
  const first = await Client.open(url);
  const [init] = await first.call("initialize", {});
  await first.call("prompt", { message: "stream slowly" });
  const before = await first.until((m) => m.method === "assistantMessage" && m.params.type === "delta" && m.params.delta.startsWith("w5 "));
  first.ws.terminate(); // no close handshake: a dropped network
  await new Promise((r) => setTimeout(r, 300));
  const after = before.at(-1).params.seq;
  const again = await Client.open(url);
  const [resumed] = await again.call("resumeSession", { sessionId: init.sessionId, afterSeq: after });
  check(resumed.replayed > 0 && resumed.gap === false, `resume: ${JSON.stringify(resumed)}`);
  const rest = await again.until(turnEnd);
  check(rest[0].params.seq > after, `first after resume: ${JSON.stringify(rest[0])}`);
  increasing([...seqs(before), ...seqs(rest)], "across the reconnect");
  const complete = rest.find((m) => m.method === "assistantMessage" && m.params.type === "complete");
  const got = deltas(before) + deltas(rest);
  check(got === complete.params.content, `missed or doubled deltas: ${JSON.stringify(got)} != ${JSON.stringify(complete.params.content)}`);
  again.close();
  console.log(`reconnect ok: ${before.length} before, ${rest.length} after`);
}

async function history(url, sessionId) {
  const client = await Client.open(url);
  const [resumed] = await client.call("resumeSession", { sessionId });
  check(resumed.sessionId === sessionId, JSON.stringify(resumed));
  const [messages] = await client.call("getMessages");
  client.close();
  console.log(JSON.stringify(messages));
}

const scenarios = { flows, reconnect, history };
const [scenario, url, ...rest] = process.argv.slice(2);
if (!scenarios[scenario]) {
  console.error("usage: node jsonrpc_client.mjs flows|reconnect|history URL [ARG]");
  process.exit(2);
}
scenarios[scenario](url, ...rest).then(
  () => process.exit(0),
  (e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  },
);
