//! An SDK session's `reload()`, its runtime without `modelRuntime` and its
//! `getAllTools()`, side by side with pi 1.6.0. `session.reload()` tells the
//! old extension instances `session_shutdown` (reason `reload`), makes them
//! stale, builds a new runner over the reloaded extensions (their flags kept)
//! and, once the session was bound, runs `reload({beforeSessionStart})` and
//! their `session_start` (reason `reload`): the new instances' handlers,
//! commands and tools are the ones in force. A session made without a
//! `modelRuntime` gets a runtime of its own over the agent directory's
//! `models.json` / `auth.json` (the `agentDir` option's when given), not the
//! running session's. `session.getAllTools()` lists pi's built-in tools, the
//! extensions' and the caller's custom tools with their exposure and
//! `sourceInfo`. An extension command notifies a JSON summary (helpers of
//! extension_sdk_runner.rs); pi-rpc's is compared with pi 1.6.0's.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::extension_sdk_runner::run_module;
use crate::extension_sdk_services::side_by_side;

const SDK_RELOAD: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import {
  createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager, SettingsManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const message = (f: () => unknown) => {
  try {
    f();
    return "ok";
  } catch (e: any) {
    return String(e?.message ?? e).slice(0, 40);
  }
};

/** The names of the session's tools. */
const toolNames = (session: any) => session.getAllTools().map((t: any) => t.name);

/** An inline extension that knows which load it is; each load registers its own tool and command. */
function generations(seen: string[], captured: any[]) {
  let generation = 0;
  return (sub: ExtensionAPI) => {
    const gen = ++generation;
    captured.push(sub);
    sub.registerFlag("level", { type: "string", default: "low", description: "Level" });
    sub.on("session_start", (e: any, ctx: any) => { captured.push(ctx); seen.push(`start:${e.reason}:${gen}:${e.previousSessionFile ?? "-"}:${sub.getFlag("level")}`); });
    sub.on("session_shutdown", (e: any) => { seen.push(`shutdown:${e.reason}:${gen}:${e.targetSessionFile ?? "-"}`); });
    sub.on("input", (e: any) => { seen.push(`input:${gen}:${e.text}`); });
    sub.on("before_agent_start", () => { seen.push(`before_agent_start:${gen}`); });
    sub.registerCommand("which", { description: `Load ${gen}`, handler: async () => { seen.push(`which:${gen}`); } });
    sub.registerCommand(`only${gen}`, { description: `Only load ${gen}`, handler: async () => { seen.push(`only:${gen}`); } });
    sub.registerTool({
      name: `tool${gen}`, label: `Tool ${gen}`, description: `Tool of load ${gen}`, parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: `load ${gen}` }], details: {} }),
    });
    sub.registerTool({
      name: "shared", label: "Shared", description: `Shared of load ${gen}`, parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: `shared ${gen}` }], details: {} }),
    });
  };
}

export default function (pi: ExtensionAPI) {
  // A provider of the running session's: not in an SDK session's own runtime.
  pi.registerProvider("outer", {
    baseUrl: "http://127.0.0.1:9/v1", apiKey: "outer-key", api: "openai-completions",
    models: [{ id: "outer-model", name: "Outer", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 }],
  } as any);

  pi.registerCommand("runtimes", {
    handler: async (_args, ctx) => {
      const fake = JSON.parse(fs.readFileSync(path.join(getAgentDir(), "models.json"), "utf8")).providers.fake;
      const has = (runtime: any, provider: string, id: string) => runtime.getModel(provider, id) !== undefined;
      const probe = (runtime: any) => ({
        outer: has(runtime, "outer", "outer-model"), fake: has(runtime, "fake", "fake-model"), elsewhere: has(runtime, "elsewhere", "far-model"),
        providers: runtime.getProviders().map((p: any) => p.id).filter((id: string) => ["outer", "fake", "elsewhere"].includes(id)),
      });
      // No agentDir: a runtime over the agent directory's files (no extension of the session's registering into it).
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true });
      await resourceLoader.reload();
      const { session: plain } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: "all" } as any);
      const plainSeen = { ...probe(plain.modelRuntime), model: `${plain.model?.provider}/${plain.model?.id}`, registry: ctx.modelRegistry.find("outer", "outer-model") !== undefined };
      await plain.prompt("first");
      plain.dispose();
      // Another agent directory: its models.json, auth.json and settings.
      const other = fs.mkdtempSync(path.join(ctx.cwd, "agent-"));
      fs.writeFileSync(path.join(other, "models.json"), JSON.stringify({ providers: { elsewhere: { ...fake, models: [{ id: "far-model", contextWindow: 64000 }] } } }));
      fs.writeFileSync(path.join(other, "settings.json"), JSON.stringify({ defaultProvider: "elsewhere", defaultModel: "far-model" }));
      const { session: far } = await createAgentSession({ cwd: ctx.cwd, agentDir: other, sessionManager: SessionManager.inMemory(ctx.cwd), noTools: "all" } as any);
      const farSeen = { ...probe(far.modelRuntime), model: `${far.model?.provider}/${far.model?.id}` };
      await far.prompt("second");
      const answered = far.messages.filter((m: any) => m.role === "assistant").map((m: any) => [m.provider, m.model, m.stopReason, m.errorMessage ?? null]);
      far.dispose();
      ctx.ui.notify(JSON.stringify({ plain: plainSeen, far: farSeen, answered }), "info");
    },
  });

  pi.registerCommand("alltools", {
    handler: async (_args, ctx) => {
      const tool = (name: string, extra: any = {}) => ({
        name, label: name, description: `The ${name} tool`, parameters: Type.Object({ text: Type.String() }),
        execute: async () => ({ content: [{ type: "text", text: name }], details: {} }), ...extra,
      });
      const inner: any[] = [];
      const factory = (sub: ExtensionAPI) => {
        sub.registerTool(tool("ext_tool", { promptGuidelines: ["Use ext_tool for text."], exposure: "model-only" }) as any);
        sub.registerTool(tool("quiet", { exposure: "deferred" }) as any);
        sub.registerTool(tool("shared", { description: "The extension's shared tool" }) as any);
        sub.on("session_start", () => { inner.push(...sub.getAllTools().map((t: any) => [t.name, t.exposure, t.sourceInfo?.path, t.sourceInfo?.source])); });
      };
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({
        cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model,
        customTools: [tool("custom_tool"), tool("shared", { description: "The caller's shared tool" })],
      } as any);
      await session.bindExtensions({});
      const all = session.getAllTools();
      ctx.ui.notify(JSON.stringify({
        names: all.map((t: any) => t.name),
        // The built-ins' own texts are pi-rpc's (compat/DEVIATIONS.md): their names, exposure and source compared.
        tools: all.map((t: any) => (t.sourceInfo?.source === "builtin" ? { name: t.name, exposure: t.exposure, sourceInfo: t.sourceInfo } : t)),
        inner,
        active: session.getActiveToolNames(),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("shellsettings", {
    handler: async (_args, ctx) => {
      // An agent directory of the session's own (its models.json copied), and a shell that marks what it runs.
      const own = fs.mkdtempSync(path.join(ctx.cwd, "own-"));
      fs.copyFileSync(path.join(getAgentDir(), "models.json"), path.join(own, "models.json"));
      const shell = path.join(own, "marking-shell");
      fs.writeFileSync(shell, '#!/bin/sh\nexport VIA=marking\nexec /bin/bash "$@"\n', { mode: 0o755 });
      const settings = (dir: string, value: any) => fs.writeFileSync(path.join(dir, "settings.json"), JSON.stringify(value));
      const results = (session: any) => session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => m.content.map((c: any) => c.text).join(""));

      // `agentDir`: its settings shape bash, and a reload reads them again.
      settings(own, { shellCommandPrefix: "export GREETING=first" });
      const { session: mine } = await createAgentSession({ cwd: ctx.cwd, agentDir: own, sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model } as any);
      await mine.prompt("first");
      settings(own, { shellCommandPrefix: "export GREETING=second", shellPath: shell });
      await mine.reload();
      await mine.prompt("second");
      const agentDirSeen = results(mine);
      mine.dispose();

      // A given `settingsManager`: the same from its files.
      const other = fs.mkdtempSync(path.join(ctx.cwd, "other-"));
      settings(other, { shellCommandPrefix: "export GREETING=third", shellPath: shell });
      const settingsManager = SettingsManager.create(ctx.cwd, other);
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true });
      await resourceLoader.reload();
      const { session: given } = await createAgentSession({ cwd: ctx.cwd, settingsManager, resourceLoader, sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model } as any);
      await given.prompt("third");
      settings(other, {});
      await given.reload();
      await given.prompt("fourth");
      const settingsManagerSeen = results(given);
      given.dispose();
      ctx.ui.notify(JSON.stringify({ agentDir: agentDirSeen, settingsManager: settingsManagerSeen }), "info");
    },
  });

  pi.registerCommand("reloaded", {
    handler: async (_args, ctx) => {
      const seen: string[] = [];
      const captured: any[] = [];
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [generations(seen, captured)] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model });
      const errors: string[] = [];
      await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
      const oldRunner: any = session.extensionRunner;
      oldRunner.setFlagValue("level", "high");
      session.setActiveToolsByName(["read", "tool1"]);
      await session.prompt("/which");
      const before = { active: session.getActiveToolNames(), all: toolNames(session), shared: session.getToolDefinition("shared")?.description };
      seen.push("reload");
      await session.reload({ beforeSessionStart: async () => { seen.push(`beforeSessionStart:${session.extensionRunner === oldRunner}`); } } as any);
      const runner: any = session.extensionRunner;
      const after = {
        newRunner: runner !== oldRunner,
        flag: runner.getFlagValues().get("level") ?? null,
        active: session.getActiveToolNames(),
        all: toolNames(session),
        shared: session.getToolDefinition("shared")?.description,
        commands: runner.getRegisteredCommands().map((c: any) => c.invocationName),
        oldCommands: oldRunner.getRegisteredCommands().map((c: any) => c.invocationName),
        oldPi: message(() => captured[0].getActiveTools()),
        oldCtx: message(() => captured[1].cwd),
        newCtx: message(() => captured[3].cwd),
        newPi: message(() => captured[2].getActiveTools()),
      };
      await session.prompt("/which");
      await session.prompt("/only1");
      await session.prompt("/only2");
      await session.prompt("call the tools");
      const results = session.messages.filter((m: any) => m.role === "toolResult").map((m: any) => [m.toolName, m.isError, m.content.map((c: any) => c.text).join("")]);

      // A session never bound: the old instances told, the new ones not started.
      const unboundSeen: string[] = [];
      const unboundLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [generations(unboundSeen, [])] });
      await unboundLoader.reload();
      const { session: unbound } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader: unboundLoader, model: ctx.model });
      let called = false;
      await unbound.reload({ beforeSessionStart: async () => { called = true; } } as any);
      await unbound.prompt("/which");
      const unboundAfter = { seen: unboundSeen, called, all: toolNames(unbound), active: unbound.getActiveToolNames() };
      unbound.dispose();

      ctx.ui.notify(JSON.stringify({ errors, seen, before, after, results, unbound: unboundAfter }), "info");
      session.dispose();
    },
  });
}
"#;

/// What `/<command>` of the module notified in one program; the fake model gives `replies`.
async fn both(module: (&'static str, &'static str), command: &str, replies: &[Reply]) -> Option<(Value, Value)> {
    let run = |reference, command: String| {
        let replies = replies.to_vec();
        async move { run_module(reference, module, &command, &replies).await }
    };
    side_by_side(run, command).await
}

#[tokio::test]
async fn an_sdk_sessions_reload_makes_its_extensions_anew_as_pis() {
    let replies = [
        Reply::tool_calls([
            FakeToolCall::new("call_1", "tool1", "{}"),
            FakeToolCall::new("call_2", "tool2", "{}"),
            FakeToolCall::new("call_3", "shared", "{}"),
        ]),
        Reply::text("Called."),
    ];
    let Some((ours, theirs)) = both(("sdk-reload.ts", SDK_RELOAD), "reloaded", &replies).await else { return };
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    // The old instances told of the reload, then the new ones started (their flag kept); their command in force.
    let at = |entry: &str| seen.iter().position(|s| s == entry);
    assert!(at("shutdown:reload:1:-").is_some_and(|i| i > at("reload").unwrap_or(usize::MAX)), "{ours}");
    assert!(at("start:reload:2:-:high").is_some(), "{ours}");
    assert!(seen.contains(&json!("which:2")) && !seen.contains(&json!("only:1")), "{ours}");
    assert_eq!(ours["after"]["newRunner"], true, "{ours}");
    assert_eq!(ours["after"]["shared"], "Shared of load 2", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_sessions_reload_makes_its_built_in_tools_from_its_settings_as_pis() {
    let bash = |id: &str| {
        Reply::tool_calls([FakeToolCall::new(id, "bash", r#"{"command":"echo \"greeting=$GREETING via=$VIA\""}"#)])
    };
    let replies: Vec<Reply> =
        ["one", "two", "three", "four"].iter().flat_map(|id| [bash(id), Reply::text("Ran.")]).collect();
    let Some((ours, theirs)) = both(("sdk-reload.ts", SDK_RELOAD), "shellsettings", &replies).await else { return };
    // The settings' command prefix and shell at creation, as read again by each reload.
    assert_eq!(ours["agentDir"], json!(["greeting=first via=\n", "greeting=second via=marking\n"]), "{ours}");
    assert_eq!(ours["settingsManager"], json!(["greeting=third via=marking\n", "greeting= via=\n"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_without_a_model_runtime_makes_its_own_as_pis() {
    let replies = [Reply::text("First."), Reply::text("Second.")];
    let Some((ours, theirs)) = both(("sdk-reload.ts", SDK_RELOAD), "runtimes", &replies).await else { return };
    // Not the running session's registrations; another agent directory's catalog and settings.
    assert_eq!(ours["plain"]["outer"], false, "{ours}\n{theirs}");
    assert_eq!(ours["plain"]["registry"], true, "{ours}\n{theirs}");
    assert_eq!(ours["far"]["model"], "elsewhere/far-model", "{ours}\n{theirs}");
    assert_eq!(ours["far"]["fake"], false, "{ours}\n{theirs}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_sessions_get_all_tools_lists_its_registry_as_pis() {
    let Some((ours, theirs)) = both(("sdk-reload.ts", SDK_RELOAD), "alltools", &[]).await else { return };
    // The caller's tool takes the extension's place; each tool with its exposure and source.
    assert!(
        ours["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "shared"
            && t["description"] == "The caller's shared tool"
            && t["sourceInfo"]["path"] == "<sdk:shared>")),
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
