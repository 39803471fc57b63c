// Drives an agent with pi 1.6.0's own RpcClient (dist/modes/rpc/rpc-client.js
// of the reference package), through every public method, and prints one
// JSON report of what each returned. tests/e2e/rpc_client.rs runs it against
// pi-rpc (through tests/clients/pi_rpc_shim.cjs) and the fake model server.
//
// Env: PI_REFERENCE_PKG (the pi-coding-agent package dir), PI_CLI_PATH (what
// RpcClient runs with node), PI_CLIENT_ARGS (a JSON array of extra agent
// arguments), and the agent's own environment.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { RpcClient } = await import(pathToFileURL(join(process.env.PI_REFERENCE_PKG, "dist/modes/rpc/rpc-client.js")).href);

const report = {};
const events = [];
const args = JSON.parse(process.env.PI_CLIENT_ARGS ?? "[]");
const client = new RpcClient({ cliPath: process.env.PI_CLI_PATH, cwd: process.cwd(), provider: "fake", model: "fake-model", args });
const step = async (name, run) => {
  try {
    report[name] = await run();
  } catch (e) {
    report[name] = { error: String(e?.message ?? e) };
  }
};

await client.start();
const unsubscribe = client.onEvent((e) => events.push(e.type));
// Event types, with the role for message events (pi 1.6.0 also sends `system` ones).
const described = (e) => (e.message?.role ? `${e.type}:${e.message.role}` : e.type);
await step("getState", () => client.getState());
await step("promptAndWait", async () => (await client.promptAndWait("hello")).map(described));
await step("getLastAssistantText", () => client.getLastAssistantText());

// Steering and a follow-up while a slow reply streams.
await step("prompt", () => client.prompt("slow one"));
await step("steer", () => client.steer("steer me"));
await step("followUp", () => client.followUp("follow me"));
await step("waitForIdle", async () => {
  await client.waitForIdle(20000);
  return "idle";
});
await step("getMessagesAfterSteering", async () => (await client.getMessages()).map((m) => m.role));

// A queued follow-up cleared, then the run aborted.
await step("collectAbort", async () => {
  const collected = client.collectEvents(20000);
  await client.prompt("slow two");
  await client.followUp("never sent");
  report.clearQueue = await client.clearQueue();
  await client.abort();
  return (await collected).filter((e) => e.type === "agent_settled");
});

await step("setModel", async () => (await client.setModel("fake", "fake-other")).id);
await step("cycleModel", async () => {
  const r = await client.cycleModel();
  return r && { id: r.model.id, isScoped: r.isScoped, thinkingLevel: r.thinkingLevel };
});
await step("getAvailableModels", async () => (await client.getAvailableModels()).map((m) => `${m.provider}/${m.id}`));
await step("setThinkingLevel", () => client.setThinkingLevel("high"));
await step("cycleThinkingLevel", () => client.cycleThinkingLevel());
await step("getAvailableThinkingLevels", () => client.getAvailableThinkingLevels());
await step("setSteeringMode", () => client.setSteeringMode("all"));
await step("setFollowUpMode", () => client.setFollowUpMode("all"));
await step("setAutoCompaction", () => client.setAutoCompaction(false));
await step("setAutoRetry", () => client.setAutoRetry(false));
await step("stateAfterSetters", async () => {
  const s = await client.getState();
  return {
    model: s.model?.id,
    thinkingLevel: s.thinkingLevel,
    steeringMode: s.steeringMode,
    followUpMode: s.followUpMode,
    autoCompactionEnabled: s.autoCompactionEnabled,
  };
});
await step("compact", async () => {
  const r = await client.compact("keep it short");
  return { summary: r.summary, hasFirstKept: typeof r.firstKeptEntryId === "string", tokensBefore: r.tokensBefore > 0 };
});
await step("bash", () => client.bash("echo from-bash"));
await step("abortBash", () => client.abortBash());
await step("abortRetry", () => client.abortRetry());
await step("getSessionStats", async () => {
  const s = await client.getSessionStats();
  return { userMessages: s.userMessages, assistantMessages: s.assistantMessages, hasFile: typeof s.sessionFile === "string" };
});
await step("exportHtml", () => client.exportHtml("export.html"));
await step("setSessionName", () => client.setSessionName("rpc client run"));
await step("getCommands", async () => (await client.getCommands()).map((c) => c.name));
const state = await client.getState();
report.sessionName = state.sessionName;
const firstSession = state.sessionFile;
await step("clone", () => client.clone());
await step("getForkMessages", () => client.getForkMessages());
await step("fork", async () => {
  const forkable = await client.getForkMessages();
  return client.fork(forkable[0].entryId);
});
await step("getEntries", async () => {
  const r = await client.getEntries();
  return { types: r.entries.map((e) => (e.message?.role ? `${e.type}:${e.message.role}` : e.type)), leaf: typeof r.leafId === "string" };
});
await step("getTree", async () => {
  const r = await client.getTree();
  return { roots: r.tree.length, leaf: typeof r.leafId === "string" };
});
await step("newSession", () => client.newSession());
await step("messagesInNewSession", async () => (await client.getMessages()).length);
await step("switchSession", () => client.switchSession(firstSession));
await step("messagesAfterSwitch", async () => (await client.getMessages()).length > 0);
unsubscribe();
report.eventTypes = [...new Set(events)].sort();
report.stderrIsText = typeof client.getStderr() === "string";
await client.stop();
report.stopped = true;
process.stdout.write(`${JSON.stringify(report)}\n`);
