// Drives an agent with pi 1.6.0's own RpcClient (dist/modes/rpc/rpc-client.js
// of the reference package) through every public method and prints one JSON
// report holding, for each step, the full value the method returned (event
// lists whole, `undefined` as the string "<undefined>", a failure as
// {"error": message}). tests/e2e/rpc_client.rs runs it against pi-rpc
// (through tests/clients/pi_rpc_shim.cjs) and against pi 1.6.0, and compares
// the two reports after normalising ids, times and paths.
//
// Env: PI_REFERENCE_PKG (the pi-coding-agent package dir), PI_CLI_PATH (what
// RpcClient runs with node), PI_CLIENT_ARGS (a JSON array of extra agent
// arguments), PI_DRIVER_SESSIONS ("0" when the agent runs with --no-session:
// the steps that need a session file are given none), and the agent's own
// environment.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { RpcClient } = await import(pathToFileURL(join(process.env.PI_REFERENCE_PKG, "dist/modes/rpc/rpc-client.js")).href);

const report = {};
const eventTypes = new Set();
const args = JSON.parse(process.env.PI_CLIENT_ARGS ?? "[]");
const sessions = process.env.PI_DRIVER_SESSIONS !== "0";
const client = new RpcClient({ cliPath: process.env.PI_CLI_PATH, cwd: process.cwd(), provider: "fake", model: "fake-model", args });
const kept = (value) => (value === undefined ? "<undefined>" : value);
const step = async (name, run) => {
  try {
    report[name] = kept(await run());
  } catch (e) {
    report[name] = { error: String(e?.message ?? e) };
  }
};

await client.start();
const unsubscribe = client.onEvent((e) => eventTypes.add(e.type));
await step("getState", () => client.getState());
await step("promptAndWait", () => client.promptAndWait("hello"));
await step("getLastAssistantText", () => client.getLastAssistantText());

// Steering and a follow-up while a slow reply streams.
await step("prompt", () => client.prompt("slow one"));
await step("steer", () => client.steer("steer me"));
await step("followUp", () => client.followUp("follow me"));
await step("waitForIdle", async () => {
  await client.waitForIdle(20000);
  return "idle";
});
await step("getMessagesAfterSteering", () => client.getMessages());

// Follow-ups queued two ways and cleared, then the run aborted.
await step("collectAbort", async () => {
  const collected = client.collectEvents(20000);
  report.promptWhileRunning = kept(await client.prompt("slow two"));
  report.followUpQueued = kept(await client.followUp("never sent"));
  report.promptAsFollowUp = kept(await client.prompt("also never sent", undefined, "followUp"));
  report.clearQueue = kept(await client.clearQueue());
  report.abort = kept(await client.abort());
  return collected;
});

await step("setModel", () => client.setModel("fake", "fake-other"));
await step("cycleModel", () => client.cycleModel());
await step("getAvailableModels", () => client.getAvailableModels());
await step("setThinkingLevel", () => client.setThinkingLevel("high"));
await step("cycleThinkingLevel", () => client.cycleThinkingLevel());
await step("getAvailableThinkingLevels", () => client.getAvailableThinkingLevels());
await step("setSteeringMode", () => client.setSteeringMode("all"));
await step("setFollowUpMode", () => client.setFollowUpMode("all"));
await step("setAutoCompaction", () => client.setAutoCompaction(false));
await step("setAutoRetry", () => client.setAutoRetry(false));
await step("stateAfterSetters", () => client.getState());
await step("compact", () => client.compact("keep it short"));
await step("bash", () => client.bash("echo from-bash"));
await step("abortBash", () => client.abortBash());
await step("abortRetry", () => client.abortRetry());
await step("getSessionStats", () => client.getSessionStats());
await step("exportHtml", () => client.exportHtml("export.html"));
await step("setSessionName", () => client.setSessionName("rpc client run"));
await step("getCommands", () => client.getCommands());
await step("stateAfterName", () => client.getState());
const firstSession = report.stateAfterName?.sessionFile;
await step("clone", () => client.clone());
await step("getForkMessages", () => client.getForkMessages());
await step("fork", async () => {
  const forkable = await client.getForkMessages();
  return client.fork(forkable[0].entryId);
});
await step("getEntries", () => client.getEntries());
await step("getEntriesSince", async () => {
  const all = await client.getEntries();
  return client.getEntries(all.entries[1].id);
});
await step("getTree", () => client.getTree());
await step("newSession", () => client.newSession(sessions ? firstSession : undefined));
await step("stateInNewSession", () => client.getState());
await step("messagesInNewSession", () => client.getMessages());
if (sessions) {
  await step("switchSession", () => client.switchSession(firstSession));
  await step("messagesAfterSwitch", () => client.getMessages());
}
unsubscribe();
report.eventTypes = [...eventTypes].sort();
report.stderrIsText = typeof client.getStderr() === "string";
await client.stop();
report.stopped = true;
process.stdout.write(`${JSON.stringify(report)}\n`);
