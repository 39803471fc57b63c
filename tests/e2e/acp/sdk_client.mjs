// An editor-like ACP client on the ACP project's TypeScript SDK
// (@agentclientprotocol/sdk, installed into target/tools/acp): it starts
// `pi --protocol acp`, keeps the files it is asked about in buffers of its
// own (as an editor's unsaved text), runs terminals as real processes, and
// rejects any permission whose call mentions "secret". It prints one JSON
// object: every request the agent made of it, every update, and the results.
//
// usage: node sdk_client.mjs <sdk dir> <pi binary> <cwd> <prompt>... [--load <session id>]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const [sdkDir, pi, cwd, ...rest] = process.argv.slice(2);
const loadAt = rest.indexOf("--load");
const prompts = loadAt >= 0 ? rest.slice(0, loadAt) : rest;
const loadId = loadAt >= 0 ? rest[loadAt + 1] : null;
const acp = await import(path.join(sdkDir, "dist/acp.js"));

const child = spawn(pi, ["--protocol", "acp"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const calls = []; // [method, params] of every request the agent made
const updates = [];
// The editor's buffers: what it has open, unsaved changes included.
const buffers = new Map([[path.join(cwd, "notes.txt"), "hello unsaved buffer\n"]]);
const terminals = new Map();
let nextTerminal = 1;

class Editor {
  async requestPermission(params) {
    calls.push(["session/request_permission", params]);
    const reject = JSON.stringify(params.toolCall).includes("secret");
    return { outcome: { outcome: "selected", optionId: reject ? "reject_once" : "allow_once" } };
  }
  async sessionUpdate(params) {
    updates.push(params.update);
  }
  async readTextFile(params) {
    calls.push(["fs/read_text_file", params]);
    if (!buffers.has(params.path)) throw acp.RequestError.resourceNotFound(params.path);
    return { content: buffers.get(params.path) };
  }
  async writeTextFile(params) {
    calls.push(["fs/write_text_file", params]);
    buffers.set(params.path, params.content);
    return {};
  }
  async createTerminal(params) {
    calls.push(["terminal/create", params]);
    const id = `term-${nextTerminal++}`;
    const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? cwd });
    const term = { output: "", exit: null };
    term.exited = new Promise((resolve) => {
      proc.on("close", (code, signal) => {
        term.exit = { exitCode: code, signal: signal ?? null };
        resolve(term.exit);
      });
    });
    proc.stdout.on("data", (d) => (term.output += d));
    proc.stderr.on("data", (d) => (term.output += d));
    term.proc = proc;
    terminals.set(id, term);
    return { terminalId: id };
  }
  async terminalOutput(params) {
    calls.push(["terminal/output", params]);
    const term = terminals.get(params.terminalId);
    return { output: term.output, truncated: false, exitStatus: term.exit };
  }
  async waitForTerminalExit(params) {
    calls.push(["terminal/wait_for_exit", params]);
    return await terminals.get(params.terminalId).exited;
  }
  async killTerminal(params) {
    calls.push(["terminal/kill", params]);
    terminals.get(params.terminalId).proc.kill();
    return {};
  }
  async releaseTerminal(params) {
    calls.push(["terminal/release", params]);
    terminals.delete(params.terminalId);
    return {};
  }
}

const connection = new acp.ClientSideConnection(() => new Editor(), stream);
const init = await connection.initialize({
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
});
let sessionId = loadId;
let opened;
if (loadId) {
  opened = await connection.loadSession({ sessionId: loadId, cwd, mcpServers: [] });
} else {
  opened = await connection.newSession({ cwd, mcpServers: [] });
  sessionId = opened.sessionId;
}
const results = [];
for (const text of prompts) {
  const result = await connection.prompt({ sessionId, prompt: [{ type: "text", text }] });
  results.push(result.stopReason);
}
const listed = await connection.listSessions({ cwd });
child.stdin.end();
await new Promise((resolve) => child.on("close", resolve));
process.stdout.write(
  JSON.stringify({ init, sessionId, opened, results, calls, updates, listed, buffers: Object.fromEntries(buffers) }) + "\n",
);
