//! Extensions inside pi's SDK session, side by side with pi 1.6.0: a
//! `DefaultResourceLoader` given an inline extension factory,
//! `createAgentSession` over it (the extension's tools offered to the model,
//! its handlers given the sub-session's events, `tool_call` changing a call's
//! input, its command run by `session.prompt("/cmd")`,
//! `session.extensionRunner`; the provider, compaction and tree-navigation
//! events, `turn_end` / `agent_before_settle` as pi's boundaries, and no
//! `user_bash` from `executeBash`); `AgentSessionRuntime` telling those
//! extensions of a replacement (`session_before_*`, `session_shutdown`,
//! `session_start` on rebind); and a second extension runtime built by hand
//! (`discoverAndLoadExtensions`, `ExtensionRunner`'s hooks, contexts,
//! commands and flags, `wrapRegisteredTool(s)`). Each part is an extension
//! command that notifies a JSON summary; pi-rpc's is compared with pi
//! 1.6.0's, with the tools each program offered the fake model.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::extension_sdk_services::{notified_text, side_by_side};
use crate::harness::{Pi, Sandbox};

const SDK_RUNNER: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import { Type } from "typebox";
import {
  createAgentSession, createAgentSessionFromServices, createAgentSessionRuntime, createAgentSessionServices, DefaultResourceLoader, discoverAndLoadExtensions, ExtensionRunner, getAgentDir, SessionManager, SettingsManager, wrapRegisteredTool, wrapRegisteredTools,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const EVENTS = [
  "session_start", "input", "before_agent_start", "agent_start", "turn_start", "context", "message_start", "message_end",
  "tool_call", "tool_execution_start", "tool_execution_end", "tool_result", "turn_end", "agent_end", "agent_settled",
];

/** Two extension files for `discoverAndLoadExtensions`, each composing with the other. */
const EXT_A = `import { Type } from "typebox";
export default function (pi: any) {
  pi.registerFlag("loud", { type: "boolean", default: false, description: "Loud" });
  pi.registerTool({
    name: "echo", label: "Echo", description: "Echoes.", parameters: Type.Object({ text: Type.String() }),
    execute: async (_id: string, params: any, _s: any, _u: any, ctx: any) => ({
      content: [{ type: "text", text: params.text + ":" + ctx.model?.id + ":" + pi.getFlag("loud") + ":" + ctx.hasUI }], details: {},
    }),
  });
  pi.registerCommand("same", { description: "Same", handler: async () => {} });
  pi.on("input", (e: any) => (e.text === "x" ? { action: "transform", text: "y" } : undefined));
  pi.on("tool_call", (e: any) => { e.input.text = e.input.text + "+a"; });
  pi.on("tool_result", (e: any) => ({ content: [...e.content, { type: "text", text: "noted" }] }));
  pi.on("before_agent_start", () => ({ message: { customType: "note", content: "from a", display: false } }));
}
`;
const EXT_B = `export default function (pi: any) {
  pi.registerCommand("same", { description: "Same", handler: async () => {} });
  pi.registerCommand("only-b", { description: "B's", handler: async () => {} });
  pi.on("input", (e: any) => (e.text === "y" ? { action: "handled" } : undefined));
  pi.on("tool_call", (e: any) => (e.input.text === "block+a" ? { block: true, reason: "no blocks" } : undefined));
  pi.on("context", (e: any) => ({ messages: e.messages.slice(-1) }));
  pi.on("context_with_system", (e: any) => ({ messages: [...e.messages, { role: "user", content: "with system", timestamp: 3 }] }));
  pi.on("message_end", (e: any) => (e.message.role === "assistant" ? { message: { ...e.message, content: [{ type: "text", text: "replaced" }] } } : undefined));
  pi.on("session_before_switch", () => ({ cancel: true }));
  pi.on("agent_start", () => { throw new Error("b fails"); });
}
`;

/** An extension file the SDK session loads by `additionalExtensionPaths`. */
const EXT_FILE = `export default function (pi: any) {
  pi.registerCommand("stamp", { description: "Stamps", handler: async (args: string, ctx: any) => { pi.appendEntry("stamp", { args, idle: ctx.isIdle() }); } });
  pi.on("before_agent_start", (e: any) => ({ message: { customType: "stamped", content: "stamp for " + e.prompt, display: true } }));
  pi.on("agent_end", (e: any) => { pi.setSessionName("after " + e.messages.length); });
}
`;

/** What one event says, briefly. */
const brief = (e: any) => {
  const parts = [e.type];
  if (e.reason) parts.push(e.reason);
  if (e.toolName) parts.push(e.toolName);
  if (e.message?.role) parts.push(e.message.role);
  if (e.type === "input") parts.push(e.text, e.source);
  if (e.type === "before_agent_start") parts.push(e.prompt);
  if (e.type === "context") parts.push(e.messages.map((m: any) => m.role).join(","));
  if (e.type === "tool_call") parts.push(JSON.stringify(e.input));
  if (e.type === "tool_result") parts.push(JSON.stringify(e.content));
  if (e.type === "turn_start") parts.push(String(e.turnIndex));
  return parts.join(":");
};

export default function (pi: ExtensionAPI) {
  pi.registerCommand("provider", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const factory = (sub: ExtensionAPI) => {
        sub.on("before_provider_request", (e: any) => {
          seen.push(["request", e.payload.model, Array.isArray(e.payload.messages), e.payload.pi_marker ?? null]);
          return { ...e.payload, pi_marker: "changed " + seen.length };
        });
        sub.on("before_provider_request", (e: any) => { seen.push(["chained", e.payload.pi_marker]); });
        sub.on("after_provider_response", (e: any) => { seen.push(["response", e.status, typeof e.headers, e.headers["content-type"] ?? null]); });
        sub.on("before_provider_headers", (e: any) => { seen.push(["headers", typeof e.headers]); });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      await session.bindExtensions({});
      await session.prompt("hi");
      ctx.ui.notify(JSON.stringify({ seen, messages: session.messages.map((m: any) => m.role) }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("compacting", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const factory = (sub: ExtensionAPI) => {
        sub.on("session_before_compact", (e: any) => {
          seen.push([e.type, e.reason, e.willRetry, e.customInstructions ?? null, typeof e.signal, e.branchEntries.length, typeof e.preparation.firstKeptEntryId]);
          if (e.customInstructions === "stop") return { cancel: true };
          return { compaction: { summary: "mine", firstKeptEntryId: e.preparation.firstKeptEntryId, tokensBefore: 42, details: { by: "ext" } } };
        });
        sub.on("session_compact", (e: any) => { seen.push([e.type, e.compactionEntry.summary, e.compactionEntry.fromHook ?? null, e.fromExtension, e.reason, e.willRetry]); });
        sub.on("session_compact_failed", (e: any) => { seen.push([e.type, e.reason, e.errorMessage ?? null, e.aborted, e.willRetry, e.fromExtension]); });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const settingsManager = SettingsManager.inMemory({ compaction: { keepRecentTokens: 1 } } as any);
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, settingsManager, model: ctx.model, noTools: true } as any);
      const events: string[] = [];
      session.subscribe((e: any) => { if (e.type.startsWith("compaction")) events.push(`${e.type}:${e.aborted ?? ""}:${e.errorMessage ?? ""}`); });
      await session.bindExtensions({});
      await session.prompt("hello");
      let cancelled = null;
      try { await session.compact("stop"); } catch (e: any) { cancelled = e.message; }
      const result: any = await session.compact("go");
      const entry: any = session.sessionManager.getBranch().at(-1);
      ctx.ui.notify(JSON.stringify({ seen, events, cancelled, result: [result.summary, result.tokensBefore, result.details],
        entry: [entry.type, entry.summary, entry.fromHook ?? null, entry.tokensBefore], messages: session.messages.map((m: any) => m.role) }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("tree", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      let at: (id: string | null | undefined) => number | null = () => null;
      let busy: any = null;
      const factory = (sub: ExtensionAPI) => {
        sub.on("session_before_tree", (e: any) => {
          const p = e.preparation;
          seen.push([e.type, at(p.targetId), at(p.oldLeafId), at(p.commonAncestorId), p.entriesToSummarize.map((x: any) => x.type), p.userWantsSummary,
            p.customInstructions ?? null, p.replaceInstructions ?? null, p.label ?? null, typeof e.signal, busy?.isCompacting ?? null]);
          if (p.customInstructions === "stop") return { cancel: true };
          if (p.customInstructions === "mine") return { summary: { summary: "my summary", details: { by: "ext" } }, label: "renamed" };
          return undefined;
        });
        sub.on("session_tree", (e: any) => {
          seen.push([e.type, at(e.newLeafId), at(e.oldLeafId), e.summaryEntry ? [e.summaryEntry.summary, e.summaryEntry.fromHook, e.summaryEntry.details] : null, e.fromExtension ?? null]);
        });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      busy = session;
      const sm = session.sessionManager;
      at = (id) => (id == null ? null : sm.getEntries().findIndex((x: any) => x.id === id));
      await session.bindExtensions({});
      await session.prompt("hello");
      const entries = sm.getEntries();
      const user = entries.find((x: any) => x.type === "message" && x.message.role === "user");
      const last = entries[entries.length - 1];
      const shape = (r: any) => ({ ...r, summaryEntry: r.summaryEntry ? [r.summaryEntry.type, at(r.summaryEntry.id)] : r.summaryEntry });
      const cancelled = shape(await session.navigateTree(user.id, { summarize: true, customInstructions: "stop", label: "keep" }));
      const leafAfterCancel = at(sm.getLeafId());
      const summarised = shape(await session.navigateTree(user.id, { summarize: true, customInstructions: "mine", replaceInstructions: true, label: "mark" }));
      const back = shape(await session.navigateTree(last.id, { label: "end" }));
      ctx.ui.notify(JSON.stringify({
        seen, cancelled, leafAfterCancel, summarised, back, leaf: at(sm.getLeafId()),
        entries: sm.getEntries().map((x: any) => (x.type === "label" ? ["label", at(x.targetId), x.label] : x.type)),
        messages: session.messages.map((m: any) => m.role),
      }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("boundary", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      let sm: any;
      const at = (id: string | undefined) => (id === undefined ? null : sm.getEntries().findIndex((x: any) => x.id === id));
      const view = (e: any) => [e.entries.map((d: any) => d.customType), e.continue, e.context.canContinue,
        e.context.contextMessages.map((m: any) => m.customType ?? m.role), e.context.llmMessages.length, e.context.pendingMessages.length];
      let settles = 0;
      const factory = (sub: ExtensionAPI) => {
        sub.on("turn_end", (e: any) => {
          seen.push(["turn_end", e.turnIndex, e.outcome, sm.getEntry(e.messageEntryId)?.message === e.message, e.toolResultEntryIds.map(at), e.toolResults.length, ...view(e)]);
          if (e.turnIndex === 0) return { entries: [{ type: "custom", customType: "mark", data: { turn: 0 } }] };
          return undefined;
        });
        sub.on("turn_end", (e: any) => { seen.push(["turn_end again", e.turnIndex, ...view(e)]); });
        sub.on("agent_before_settle", (e: any) => {
          seen.push(["agent_before_settle", e.outcome, ...view(e)]);
          if (settles++ === 0) return { entries: [{ type: "custom_message", customType: "again", content: "go on", display: false }], continue: true };
          return undefined;
        });
        sub.on("agent_before_settle", (e: any) => { seen.push(["agent_before_settle again", ...view(e)]); });
        sub.on("agent_settled", () => { seen.push(["agent_settled"]); });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      sm = session.sessionManager;
      await session.bindExtensions({});
      await session.prompt("hello");
      ctx.ui.notify(JSON.stringify({
        seen,
        entries: sm.getEntries().map((x: any) => x.customType ?? x.message?.role ?? x.type),
        messages: session.messages.map((m: any) => m.customType ?? m.role),
      }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("bash", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const factory = (sub: ExtensionAPI) => {
        sub.on("user_bash", (e: any) => { seen.push(["user_bash", e.command]); return { result: { output: "from the extension", exitCode: 0, cancelled: false, truncated: false } }; });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      await session.bindExtensions({});
      const result: any = await session.executeBash("echo ran here");
      ctx.ui.notify(JSON.stringify({ seen, handlers: session.extensionRunner.hasHandlers("user_bash"), result: [result.output.trim(), result.exitCode],
        entries: session.sessionManager.getEntries().map((x: any) => x.message?.role ?? x.type) }), "info");
      session.dispose();
    },
  });
  pi.registerCommand("messages", {
    handler: async (_args, ctx) => {
      const seen: string[] = [];
      const factory = (sub: ExtensionAPI) => {
        sub.registerCommand("note", {
          handler: async () => {
            sub.sendMessage({ customType: "plain", content: "plain note", display: true });
            sub.sendMessage({ customType: "later", content: "for the next turn", display: false }, { deliverAs: "nextTurn" });
          },
        });
        sub.on("input", (e: any) => { seen.push(`input:${e.text}:${e.source}`); });
        sub.on("before_agent_start", (e: any) => { seen.push(`start:${e.prompt ?? e.message?.customType}`); });
        sub.on("message_end", (e: any) => { seen.push(`end:${e.message.role}:${e.message.customType ?? ""}`); });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
      const heard: string[] = [];
      session.subscribe((e: any) => { if (e.type === "message_end") heard.push(`${e.message.role}:${e.message.customType ?? ""}`); });
      await session.bindExtensions({});
      await session.prompt("/note");
      await session.prompt("hi");
      await (session as any).sendCustomMessage({ customType: "kick", content: "go on", display: true }, { triggerTurn: true });
      await session.sendUserMessage("/note");
      ctx.ui.notify(JSON.stringify({
        seen, heard,
        messages: session.messages.map((m: any) => [m.role, m.customType ?? null]),
        entries: session.sessionManager.getEntries().map((e: any) => e.customType ?? e.message?.role ?? e.type),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("paths", {
    handler: async (_args, ctx) => {
      fs.writeFileSync(path.join(ctx.cwd, "sub-ext.ts"), EXT_FILE);
      // Not `noExtensions`: the user's extensions (this file) load in the sub-session too, after the given path.
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), additionalExtensionPaths: ["sub-ext.ts"] });
      await resourceLoader.reload();
      const { session, extensionsResult } = await createAgentSession({
        cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true,
      } as any);
      await session.bindExtensions({});
      await session.prompt("/stamp one two");
      await session.prompt("go");
      const runner: any = session.extensionRunner;
      ctx.ui.notify(JSON.stringify({
        loaded: extensionsResult.extensions.map((e: any) => path.basename(e.path)),
        errors: extensionsResult.errors,
        commands: runner.getRegisteredCommands().map((c: any) => c.invocationName),
        entries: session.sessionManager.getEntries().map((e: any) => [e.type, e.customType ?? e.message?.role ?? null, e.data ?? e.message?.content ?? e.name ?? null]),
        name: session.sessionName ?? null,
        messages: session.messages.map((m: any) => [m.role, m.customType ?? null]),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("replaced", {
    handler: async (_args, ctx) => {
      const seen: string[] = [];
      let refuse = true;
      const factory = (sub: ExtensionAPI) => {
        for (const name of ["session_start", "session_shutdown", "session_before_switch", "session_before_fork"]) {
          sub.on(name as any, (e: any) => { seen.push([e.type, e.reason ?? "", e.targetSessionFile ? "target" : "", e.previousSessionFile ? "previous" : "", e.position ?? ""].join(":")); });
        }
        sub.on("session_before_switch", () => {
          if (!refuse) return undefined;
          refuse = false;
          return { cancel: true };
        });
      };
      const createRuntime = async ({ cwd, agentDir, sessionManager, sessionStartEvent }: any) => {
        const services = await createAgentSessionServices({ cwd, agentDir, resourceLoaderOptions: { noExtensions: true, extensionFactories: [factory] } });
        return { ...(await createAgentSessionFromServices({ services, sessionManager, sessionStartEvent, model: ctx.model } as any)), services, diagnostics: services.diagnostics };
      };
      const runtime = await createAgentSessionRuntime(createRuntime, { cwd: ctx.cwd, agentDir: getAgentDir(), sessionManager: SessionManager.create(ctx.cwd) });
      runtime.setRebindSession(async (session: any) => { await session.bindExtensions({}); });
      await runtime.session.bindExtensions({});
      const refused = await runtime.newSession();
      await runtime.session.prompt("hello");
      const first = runtime.session.sessionFile!;
      const fresh = await runtime.newSession();
      await runtime.switchSession(first);
      const user = runtime.session.sessionManager.getEntries().find((e: any) => e.type === "message" && e.message.role === "user")!;
      const forked = await runtime.fork(user.id);
      await runtime.dispose();
      ctx.ui.notify(JSON.stringify({ refused, fresh, forked, seen }), "info");
    },
  });

  pi.registerCommand("direct", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "exts");
      fs.mkdirSync(path.join(dir, "pkg"), { recursive: true });
      fs.mkdirSync(path.join(dir, "more"), { recursive: true });
      fs.writeFileSync(path.join(dir, "a.ts"), EXT_A);
      fs.writeFileSync(path.join(dir, "pkg", "index.ts"), EXT_B);
      fs.writeFileSync(path.join(dir, "broken.ts"), "export const notAFactory = 1;\n");
      fs.writeFileSync(path.join(dir, "more", "c.ts"), "export default function (pi: any) { pi.registerCommand(\"c\", { handler: async () => {} }); }\n");
      const rel = (p: string) => path.relative(ctx.cwd, p);
      const configured = [path.join(dir, "a.ts"), path.join(dir, "pkg"), "exts/broken.ts", "exts/missing.ts", path.join(dir, "more")];
      const result: any = await discoverAndLoadExtensions(configured, ctx.cwd, path.join(ctx.cwd, "no-agent"));
      let early = null;
      try { result.runtime.getActiveTools(); } catch (e: any) { early = e.message; }
      const runner: any = new ExtensionRunner(result.extensions, result.runtime, ctx.cwd, SessionManager.inMemory(ctx.cwd), ctx.modelRegistry);
      const errors: string[] = [];
      runner.onError((e: any) => errors.push(`${rel(e.extensionPath)}:${e.event}:${e.error}`));
      runner.bindCore(
        { getActiveTools: () => ["echo"], getThinkingLevel: () => "off", getAllTools: () => [], setActiveTools: () => {} },
        {
          getModel: () => ctx.model, getScopedModels: () => [], isIdle: () => true, isProjectTrusted: () => true, getSignal: () => undefined,
          abort: () => {}, hasPendingMessages: () => false, shutdown: () => {}, getContextUsage: () => undefined, compact: () => {}, getSystemPrompt: () => "sys",
        },
      );
      const flagsBefore = [...runner.getFlagValues()];
      runner.setFlagValue("loud", true);
      const callInput = { text: "hi" };
      const allowed = (await runner.emitToolCall({ type: "tool_call", toolName: "echo", toolCallId: "1", input: callInput })) ?? null;
      const blocked = await runner.emitToolCall({ type: "tool_call", toolName: "echo", toolCallId: "2", input: { text: "block" } });
      const toolResult = await runner.emitToolResult({ type: "tool_result", toolName: "echo", toolCallId: "1", input: {}, content: [{ type: "text", text: "r" }], details: {}, isError: false });
      const started = await runner.emitBeforeAgentStart({ messageType: "user", prompt: "p" }, { cwd: ctx.cwd, selectedTools: ["echo"] });
      const context = await runner.emitContext([{ role: "user", content: "one", timestamp: 1 }, { role: "user", content: "two", timestamp: 2 }]);
      const ended = await runner.emitMessageEnd({ type: "message_end", message: { role: "assistant", content: [{ type: "text", text: "orig" }] } });
      const switched = await runner.emit({ type: "session_before_switch", reason: "new" });
      await runner.emit({ type: "agent_start" });
      const [echo] = runner.getAllRegisteredTools();
      const wrapped = wrapRegisteredTool(echo, runner);
      const executed = await wrapped.execute("t1", { text: "hey" }, undefined, undefined);
      const c = runner.createContext();
      const context1 = { hasUI: c.hasUI, mode: c.mode ?? null, model: c.model?.id, cwd: c.cwd === ctx.cwd, idle: c.isIdle(), prompt: c.getSystemPrompt(), level: c.thinkingLevel };
      const command = runner.createCommandContext();
      runner.invalidate();
      let stale = null;
      try { c.cwd; } catch (e: any) { stale = e.message.slice(0, 40); }
      ctx.ui.notify(JSON.stringify({
        loaded: result.extensions.map((e: any) => rel(e.path)),
        loadErrors: result.errors.map((e: any) => [rel(e.path), e.error.replace(ctx.cwd, "<cwd>").split("\n")[0]]),
        early, flagsBefore, flags: [...runner.getFlags().keys()], flagValues: [...runner.getFlagValues()],
        paths: runner.getExtensionPaths().map(rel),
        commands: runner.getRegisteredCommands().map((c: any) => [c.invocationName, c.description ?? null]),
        sameTwo: runner.getCommand("same:2")?.description ?? null,
        tools: runner.getAllRegisteredTools().map((t: any) => t.definition.name),
        definition: runner.getToolDefinition("echo")?.label ?? null,
        has: ["input", "tool_call", "context", "context_with_system", "message_end", "user_bash"].map((e) => runner.hasHandlers(e)),
        inputs: [await runner.emitInput("x", undefined, "interactive"), await runner.emitInput("z", undefined, "interactive"), await runner.emitInput("y", undefined, "rpc")],
        allowed, callInput, blocked, toolResult,
        started: { messages: started.messages, selectedTools: started.systemPromptOptions.selectedTools },
        context, ended, switched, errors,
        wrapped: { name: wrapped.name, label: wrapped.label, executed },
        wrappedAll: wrapRegisteredTools(runner.getAllRegisteredTools(), runner).map((t: any) => t.name),
        context1, commandCtx: ["newSession", "fork", "navigateTree", "switchSession", "reload", "waitForIdle", "getSystemPromptOptions"].map((k) => typeof command[k]),
        stale,
      }), "info");
    },
  });

  pi.registerCommand("inline", {
    handler: async (_args, ctx) => {
      const seen: string[] = [];
      const factory = (sub: ExtensionAPI) => {
        sub.registerTool({
          name: "shout",
          label: "Shout",
          description: "Shouts the text back.",
          parameters: Type.Object({ text: Type.String() }),
          execute: async (_id: string, params: any, _signal: any, _onUpdate: any, tctx: any) => ({
            content: [{ type: "text", text: `${params.text.toUpperCase()} (${tctx.cwd === ctx.cwd})` }],
            details: { shouted: true },
          }),
        });
        for (const name of EVENTS) sub.on(name as any, (e: any) => { seen.push(brief(e)); });
        sub.on("tool_call", (e: any) => { if (e.toolName === "shout") e.input.text = `${e.input.text}!`; });
        sub.registerCommand("hi", {
          description: "Says hi",
          handler: async (args: string, cctx: any) => {
            seen.push(`command:hi:${args}:${cctx.cwd === ctx.cwd}:${typeof cctx.newSession}:${cctx.hasUI}`);
          },
        });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session, extensionsResult } = await createAgentSession({
        cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model,
      });
      const beforeBind = [...seen];
      await session.bindExtensions({});
      const afterBind = [...seen];
      seen.length = 0;
      await session.prompt("/hi there");
      const command = [...seen];
      seen.length = 0;
      await session.prompt("shout hello");
      const runner: any = session.extensionRunner;
      const toolResult: any = session.messages.find((m: any) => m.role === "toolResult");
      ctx.ui.notify(JSON.stringify({
        loaded: extensionsResult.extensions.map((e: any) => e.path),
        errors: extensionsResult.errors,
        beforeBind, afterBind, command, events: seen,
        active: session.getActiveToolNames(),
        all: session.getAllTools().map((t: any) => t.name),
        toolResult: toolResult ? { text: toolResult.content, details: toolResult.details, isError: toolResult.isError } : null,
        roles: session.messages.map((m: any) => m.role),
        runner: {
          paths: runner.getExtensionPaths(),
          tools: runner.getAllRegisteredTools().map((t: any) => [t.definition.name, t.sourceInfo?.path]),
          command: runner.getCommand("hi")?.description ?? null,
          handlers: ["tool_call", "input", "session_shutdown"].map((e) => runner.hasHandlers(e)),
        },
      }), "info");
      session.dispose();
    },
  });
}
"#;

/// What `/<command>` notified in one program and the tool names of each model request.
async fn run(reference: bool, command: &str) -> Option<Value> {
    let replies = [Reply::tool_call("call_1", "shout", r#"{"text":"hello"}"#), Reply::text("Shouted.")];
    run_module(reference, ("sdk-runner.ts", SDK_RUNNER), command, &replies).await
}

/// The JSON note `/<command>` of the extension `module` notified in one program (pi-rpc, or pi 1.6.0
/// when `reference`), the fake model given `replies` and the sandbox prepared by `setup`; the
/// program is ended after. `None` without the tools.
pub(crate) async fn module_note(
    reference: bool,
    module: (&str, &str),
    replies: &[Reply],
    setup: &dyn Fn(&Sandbox),
    command: &str,
) -> Option<Value> {
    let (mut pi, sb) = start_module(reference, module, replies, setup).await?;
    let text = notified_text(&mut pi, &sb, command).await;
    let note: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}"));
    pi.close_stdin();
    pi.wait().await;
    Some(note)
}

/// What `/<command>` of the extension `module` (file name, source) notified in one program, with
/// the tool names each model request offered and its `pi_marker`; the fake model gives `replies`.
pub async fn run_module(reference: bool, module: (&str, &str), command: &str, replies: &[Reply]) -> Option<Value> {
    let (mut pi, sb) = start_module(reference, module, replies, &|_| {}).await?;
    let text = notified_text(&mut pi, &sb, command).await;
    let mut note: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}"));
    let offered: Vec<Value> = sb
        .server()
        .requests()
        .iter()
        .map(|r| {
            let names = r.body["tools"].as_array().map(|tools| {
                tools.iter().filter_map(|t| t["function"]["name"].as_str().map(String::from)).collect::<Vec<_>>()
            });
            json!(names)
        })
        .collect();
    note["offered"] = json!(offered);
    // What a `before_provider_request` handler put into the payload each request carried.
    note["markers"] = json!(sb.server().requests().iter().map(|r| r.body["pi_marker"].clone()).collect::<Vec<_>>());
    Some(note)
}

/// pi-rpc (`reference`: pi 1.6.0) started with the extension `module` (file name, source), the fake
/// model given `replies`, the sandbox prepared by `setup` first; `None` without the tools.
pub async fn start_module(
    reference: bool,
    module: (&str, &str),
    replies: &[Reply],
    setup: &dyn Fn(&Sandbox),
) -> Option<(Pi, Sandbox)> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let package = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, module.0, module.1);
    setup(&sb);
    for reply in replies {
        sb.server().push(reply.clone());
    }
    let pi = if reference {
        spawn_reference(&sb, &node, &cli)
    } else {
        sb.spawn_with_env(&["--no-session"], &[("PI_RPC_DOCS_DIR", &package)])
    };
    Some((pi, sb))
}

async fn both(command: &str) -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, command).await
}

#[tokio::test]
async fn sdk_session_extensions_see_and_change_its_provider_requests_as_in_pi() {
    let Some((ours, theirs)) = both("provider").await else { return };
    // Each handler's payload went out (the second handler saw the first's), the response told after.
    let markers = ours["markers"].as_array().cloned().unwrap_or_default();
    assert_eq!(markers.len(), 2, "{ours}");
    assert!(markers.iter().all(|m| m.as_str().is_some_and(|m| m.starts_with("changed "))), "{ours}");
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert!(seen.contains(&json!(["chained", markers[0]])), "{ours}");
    assert!(seen.iter().any(|s| s[0] == "response" && s[1] == 200), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn sdk_session_extensions_cancel_or_make_its_compaction_as_in_pi() {
    let Some((ours, theirs)) = both("compacting").await else { return };
    assert_eq!(ours["cancelled"], "Compaction cancelled", "{ours}");
    assert_eq!(ours["entry"], json!(["compaction", "mine", true, 42]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn sdk_session_extensions_cancel_or_summarise_its_tree_navigation_as_in_pi() {
    let Some((ours, theirs)) = both("tree").await else { return };
    // A cancel leaves the leaf; a handler's summary becomes the branch summary with its label; plain moves told after.
    assert_eq!(ours["cancelled"], json!({"cancelled": true}), "{ours}");
    assert_eq!(ours["summarised"]["editorText"], "hello", "{ours}");
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert!(
        seen.iter()
            .any(|s| s[0] == "session_tree" && s[3] == json!(["my summary", true, {"by": "ext"}]) && s[4] == true),
        "{ours}"
    );
    assert!(
        ours["entries"].as_array().is_some_and(|e| e.iter().any(|x| x[0] == "label" && x[2] == "renamed")),
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn sdk_session_extensions_act_at_turn_end_and_before_settling_as_in_pi() {
    let Some((ours, theirs)) = both("boundary").await else { return };
    // turn_end handlers chained with pi's boundary fields; their entries written; agent_before_settle's continue ran a turn.
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert!(seen.iter().any(|s| s[0] == "turn_end again" && s[1] == 0 && s[2] == json!(["mark"])), "{ours}");
    assert!(seen.iter().any(|s| s[0] == "turn_end" && s[3] == true), "{ours}");
    assert!(
        ours["entries"].as_array().is_some_and(|e| e.contains(&json!("mark")) && e.contains(&json!("again"))),
        "{ours}"
    );
    assert_eq!(ours["offered"].as_array().map(Vec::len), Some(3), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_sessions_execute_bash_runs_without_user_bash_as_in_pi() {
    let Some((ours, theirs)) = both("bash").await else { return };
    // pi's front ends ask `user_bash`; the SDK session's executeBash itself does not: the command ran here.
    assert_eq!(ours["seen"], json!([]), "{ours}");
    assert_eq!(ours["handlers"], true, "{ours}");
    assert_eq!(ours["result"], json!(["ran here", 0]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_loads_extension_files_as_pi_does() {
    let Some((ours, theirs)) = both("paths").await else { return };
    assert_eq!(ours["loaded"], json!(["sub-ext.ts", "sdk-runner.ts"]), "{ours}");
    // The command appended its entry; the run carried the `before_agent_start` message after the prompt.
    assert_eq!(ours["entries"][2], json!(["custom", "stamp", {"args": "one two", "idle": true}]), "{ours}");
    assert_eq!(ours["messages"][2], json!(["custom", "stamped"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn sdk_session_extensions_send_messages_as_in_pi() {
    let Some((ours, theirs)) = both("messages").await else { return };
    // Appended at once; held for the next run, after its prompt; a run of its own; no command from sendUserMessage.
    assert_eq!(ours["heard"][0], "custom:plain", "{ours}");
    assert!(ours["seen"].as_array().is_some_and(|s| s.contains(&json!("input:/note:extension"))), "{ours}");
    assert_eq!(ours["messages"][3], json!(["custom", "later"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_session_runtime_tells_the_sessions_extensions_as_pi_does() {
    let Some((ours, theirs)) = both("replaced").await else { return };
    assert_eq!(ours["refused"], json!({"cancelled": true}), "{ours}");
    assert_eq!(ours["seen"][1], "session_before_switch:new:::", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_extension_runner_built_by_hand_composes_handlers_as_in_pi() {
    let Some((ours, theirs)) = both("direct").await else { return };
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_inline_extension_runs_inside_an_sdk_session_as_in_pi() {
    let Some((ours, theirs)) = both("inline").await else { return };
    // The command ran inside the sub-session, its handlers saw the whole run, the tool's input changed by `tool_call`.
    assert_eq!(ours["command"], json!(["command:hi:there:true:function:false"]), "{ours}");
    assert_eq!(ours["afterBind"], json!(["session_start:startup"]), "{ours}");
    assert_eq!(ours["offered"][0], json!(["read", "bash", "edit", "write", "shout"]), "{ours}");
    assert_eq!(ours["toolResult"]["text"][0]["text"], "HELLO! (true)", "{ours}");
    assert!(ours["events"].as_array().is_some_and(|e| e.len() > 20), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
