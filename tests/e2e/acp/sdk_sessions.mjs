// The session lifecycle through the ACP project's TypeScript SDK
// (@agentclientprotocol/sdk): a session never prompted is closed, loaded and
// resumed; a prompted one is listed with its title, forked (the SDK's
// unstable_forkSession), and deleted. Prints one JSON object with what each
// step returned (errors as {code, message}).
//
// usage: node sdk_sessions.mjs <sdk dir> <pi binary> <cwd>
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const [sdkDir, pi, cwd] = process.argv.slice(2);
const acp = await import(path.join(sdkDir, "dist/acp.js"));

const child = spawn(pi, ["--protocol", "acp"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
class Editor {
  async requestPermission() {
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  }
  async sessionUpdate(params) {
    updates.push(params);
  }
}
const connection = new acp.ClientSideConnection(() => new Editor(), stream);
const report = {};
/** Run one step; its result, or its error as {code, message}. */
async function step(name, run) {
  try {
    report[name] = (await run()) ?? null;
  } catch (e) {
    report[name] = { error: { code: e.code, message: e.message } };
  }
  return report[name];
}
const text = (t) => [{ type: "text", text: t }];

await step("init", () => connection.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} }));
const fresh = (await step("new", () => connection.newSession({ cwd, mcpServers: [] }))).sessionId;
await step("closeFresh", () => connection.closeSession({ sessionId: fresh }));
await step("loadFresh", () => connection.loadSession({ sessionId: fresh, cwd, mcpServers: [] }));
await step("resumeOpen", () => connection.resumeSession({ sessionId: fresh, cwd, mcpServers: [] }));
await step("promptFresh", () => connection.prompt({ sessionId: fresh, prompt: text("now it has words") }));

const named = (await step("new2", () => connection.newSession({ cwd, mcpServers: [] }))).sessionId;
await step("prompt2", () => connection.prompt({ sessionId: named, prompt: text("the secret word is pear") }));
const fork = (await step("fork", () => connection.unstable_forkSession({ sessionId: named, cwd, mcpServers: [] })))
  .sessionId;
await step("promptFork", () => connection.prompt({ sessionId: fork, prompt: text("what was the word?") }));
await step("closeFork", () => connection.closeSession({ sessionId: fork }));
const before = updates.length;
await step("resumeFork", () => connection.resumeSession({ sessionId: fork, cwd, mcpServers: [] }));
report.updatesDuringResume = updates.slice(before).filter((u) => u.sessionId === fork).length;
await step("listed", () => connection.listSessions({ cwd }));
await step("delete", () => connection.deleteSession({ sessionId: named }));
await step("listedAfter", () => connection.listSessions({ cwd }));
await step("loadDeleted", () => connection.loadSession({ sessionId: named, cwd, mcpServers: [] }));

child.stdin.end();
await new Promise((resolve) => child.on("close", resolve));
process.stdout.write(JSON.stringify({ ids: { fresh, named, fork }, report }) + "\n");
