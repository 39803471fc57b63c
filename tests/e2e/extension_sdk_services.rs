//! The rest of pi's SDK inside an extension, side by side with pi 1.6.0:
//! `SettingsManager` (files in pi's layout, getters, setters, `flush`,
//! `inMemory`, an untrusted project), `ModelRuntime` / `ModelRegistry` (the
//! catalog and credentials), `DefaultResourceLoader` (skills, prompt
//! templates, themes, context files, SYSTEM.md / APPEND_SYSTEM.md found as pi
//! finds them), `createAgentSession` given those, and `AgentSessionRuntime`
//! (`newSession`, `switchSession`, `importFromJsonl`, `fork`), and the SDK session's
//! `navigateTree` (with a branch summary), `compact`, `executeBash`, `exportToHtml`, the compaction functions, `exportToJsonl`, `reload`, `bindExtensions`. Each part is an
//! extension command that notifies a JSON summary; pi-rpc's is compared with
//! pi 1.6.0's, paths of the sandbox normalised.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::path::Path;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::harness::{Pi, Sandbox};

const SDK_SERVICES: &str = r#"import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  collectEntriesForBranchSummary, compact, createAgentSession, createAgentSessionFromServices, createAgentSessionRuntime, createAgentSessionServices, DefaultResourceLoader, findCutPoint,
  estimateTokens, generateBranchSummary, generateSummary, prepareBranchEntries, generateSummaryWithUsage, getAgentDir, ModelRegistry, ModelRuntime, SessionManager, SettingsManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const GETTERS = [
  "getSessionDir", "getDefaultProvider", "getDefaultModel", "getSteeringMode", "getFollowUpMode", "getThemeSetting", "getTheme",
  "getDefaultThinkingLevel", "getAllModelThinkingLevels", "getTransport", "getSessionShareDestination", "getCompactionEnabled",
  "getCompactionSettings", "getBranchSummarySettings", "getRetryEnabled", "getRetrySettings", "getHttpIdleTimeoutMs",
  "getCacheWarmingMode", "getProviderRetrySettings", "getHideThinkingBlock", "getShellPath", "getQuietStartup",
  "getDefaultProjectTrust", "getShellCommandPrefix", "getNpmCommand", "getEnableSkillCommands", "getThinkingBudgets",
  "getPackages", "getExtensionPaths", "getSkillPaths", "getPromptTemplatePaths", "getThemePaths", "getShowImages",
  "getImageWidthCells", "getImageAutoResize", "getBlockImages", "getEnabledModels", "getDefaultTools", "getDoubleEscapeAction",
  "getTreeFilterMode", "getEditorPaddingX", "getOutputPad", "getAutocompleteMaxVisible", "getCodeBlockIndent",
  "getMermaidRenderingMode", "getWarnings", "getTuiMode", "getFullscreenScrollbar", "getFullscreenWheelScrollLines",
  "isProjectTrusted", "getSettings", "getGlobalSettings", "getProjectSettings",
];
const getters = (sm: any) => Object.fromEntries(GETTERS.map((name) => [name, sm[name]() ?? null]));
const read = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"));
const errors = (sm: any) => sm.drainErrors().map((e: any) => ({ scope: e.scope, path: e.path ?? null }));

export default function (pi: ExtensionAPI) {
  pi.registerCommand("settings", {
    handler: async (_args, ctx) => {
      const proj = path.join(ctx.cwd, "proj");
      const userFile = path.join(getAgentDir(), "settings.json");
      const sm = SettingsManager.create(proj, getAgentDir());
      const before = getters(sm);
      sm.setDefaultThinkingLevel("low");
      sm.setCompactionEnabled(false);
      sm.setModelThinkingLevel("fake", "fake-model", "high");
      sm.setShowImages(false);
      sm.setProjectSkillPaths(["extra-skills"]);
      // Another program changes the user's file before the writes land: its change stays.
      fs.writeFileSync(userFile, JSON.stringify({ ...read(userFile), external: 1 }));
      await sm.flush();
      const after = { getters: getters(sm), user: read(userFile), project: read(path.join(proj, ".pi", "settings.json")), errors: errors(sm) };
      sm.applyOverrides({ retry: { enabled: false } });
      const overridden = { retry: sm.getRetryEnabled(), user: read(userFile).retry ?? null };
      const mem = SettingsManager.inMemory({ queueMode: "all", compaction: { enabled: false } } as any);
      mem.setTheme("light");
      await mem.flush();
      const untrusted = SettingsManager.create(proj, getAgentDir(), { projectTrusted: false });
      let refused = null;
      try {
        untrusted.setProjectThemePaths(["t"]);
      } catch (e: any) {
        refused = e.message;
      }
      ctx.ui.notify(JSON.stringify({
        before, after, overridden,
        memory: { getters: getters(mem), errors: errors(mem) },
        untrusted: { settings: untrusted.getSettings(), refused },
      }), "info");
    },
  });

  pi.registerCommand("models", {
    handler: async (_args, ctx) => {
      const runtime = await ModelRuntime.create();
      const registry = new ModelRegistry(runtime);
      const fake = registry.find("fake", "fake-model")!;
      ctx.ui.notify(JSON.stringify({
        fake,
        sameAsCtx: JSON.stringify(fake) === JSON.stringify(ctx.modelRegistry.find("fake", "fake-model")),
        missing: registry.find("fake", "nope") ?? null,
        all: registry.getAll().filter((m: any) => m.provider === "fake").map((m: any) => m.id),
        available: registry.getAvailable().filter((m: any) => m.provider === "fake").map((m: any) => m.id),
        runtimeModels: runtime.getModels("fake").map((m: any) => m.id),
        runtimeAvailable: (await runtime.getAvailable("fake")).map((m: any) => m.id),
        runtimeModel: runtime.getModel("fake", "fake-other")?.id ?? null,
        configured: [registry.hasConfiguredAuth(fake), runtime.hasConfiguredAuth("fake"), runtime.hasConfiguredAuth("nobody")],
        oauth: registry.isUsingOAuth(fake),
        key: await registry.getApiKeyAndHeaders(fake),
        apiKey: (await registry.getApiKeyForProvider("fake")) ?? null,
        auth: ((await runtime.getAuth("fake")) as any)?.auth?.apiKey ?? null,
        name: registry.getProviderDisplayName("fake"),
        error: registry.getError() ?? null,
      }), "info");
    },
  });

  const loaderSummary = (loader: any) => ({
    skills: loader.getSkills(),
    prompts: loader.getPrompts(),
    agents: loader.getAgentsFiles(),
    system: loader.getSystemPrompt() ?? null,
    systemSource: loader.getSystemPromptSource() ?? null,
    append: loader.getAppendSystemPrompt(),
    appendSources: loader.getAppendSystemPromptSources(),
    themes: loader.getThemes().themes.map((t: any) => t.name).sort(),
    themeDiagnostics: loader.getThemes().diagnostics.map((d: any) => ({ type: d.type, path: d.path })),
    extensions: loader.getExtensions().extensions.length,
  });

  pi.registerCommand("resources", {
    handler: async (_args, ctx) => {
      const proj = path.join(ctx.cwd, "proj");
      const loader = new DefaultResourceLoader({
        cwd: proj,
        agentDir: getAgentDir(),
        noExtensions: true,
        additionalSkillPaths: [path.join(ctx.cwd, "more-skills")],
        additionalThemePaths: [path.join(ctx.cwd, "no-such-theme.json")],
      });
      await loader.reload();
      const bare = new DefaultResourceLoader({ cwd: proj, agentDir: getAgentDir(), noExtensions: true, noSkills: true, noPromptTemplates: true, noContextFiles: true, noThemes: true, systemPrompt: "Be brief.", appendSystemPrompt: ["And kind."] });
      await bare.reload();
      ctx.ui.notify(JSON.stringify({ full: loaderSummary(loader), bare: loaderSummary(bare) }), "info");
    },
  });

  pi.registerCommand("sdkopts", {
    handler: async (_args, ctx) => {
      const proj = path.join(ctx.cwd, "proj");
      const settingsManager = SettingsManager.inMemory({ defaultThinkingLevel: "low", defaultTools: ["read", "grep"], steeringMode: "all", followUpMode: "all" } as any);
      const resourceLoader = new DefaultResourceLoader({ cwd: proj, agentDir: getAgentDir(), settingsManager, noExtensions: true });
      await resourceLoader.reload();
      const modelRuntime = await ModelRuntime.create();
      const { session, modelFallbackMessage } = await createAgentSession({
        cwd: proj, sessionManager: SessionManager.inMemory(proj), settingsManager, resourceLoader, modelRuntime, model: ctx.model,
      });
      const prompt = session.systemPrompt;
      ctx.ui.notify(JSON.stringify({
        model: `${session.model?.provider}/${session.model?.id}`,
        thinkingLevel: session.thinkingLevel,
        tools: session.getActiveToolNames(),
        queues: [session.steeringMode, session.followUpMode],
        prompt: ["Project rules: tabs.", "You are a terse project bot.", "Always sign as Bot.", "tidy-skill"].map((t) => prompt.includes(t)),
        fallback: modelFallbackMessage ?? null,
        entries: session.sessionManager.getEntries().map((e: any) => e.type),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("compaction", {
    handler: async (_args, ctx) => {
      // keepRecentTokens 1: the cut falls inside the last turn, so both of pi's summaries are asked for.
      const settingsManager = SettingsManager.inMemory({ compaction: { keepRecentTokens: 1 } } as any);
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, noTools: true } as any);
      const events: string[] = [];
      session.subscribe((e: any) => { if (e.type.startsWith("compaction")) events.push(`${e.type}:${e.reason}:${e.errorMessage ?? ""}`); });
      await session.prompt("hello");
      await session.prompt("again");
      const sm = session.sessionManager;
      const branch = sm.getBranch();
      const cut = findCutPoint(branch, 0, branch.length, 1);
      const index = (id: string) => sm.getBranch().findIndex((e: any) => e.id === id);
      const result: any = await session.compact("Mind the files.");
      const entry: any = sm.getBranch().at(-1);
      let again = null;
      try { await session.compact(); } catch (e: any) { again = e.message; }
      const { apiKey, headers } = await ctx.modelRegistry.getApiKeyAndHeaders(ctx.model!) as any;
      const summary = await generateSummary(session.messages.slice(1), ctx.model!, 0, apiKey, headers, undefined, "Be short.");
      const withUsage = await generateSummaryWithUsage([], ctx.model!, 0, apiKey, headers, undefined, undefined, "Earlier.");
      const fileOps = { read: new Set(["a.txt", "b.txt"]), written: new Set(["b.txt"]), edited: new Set<string>() };
      const own = await compact({ firstKeptEntryId: "x", messagesToSummarize: [], turnPrefixMessages: [], isSplitTurn: false, tokensBefore: 7, previousSummary: "Before.", fileOps, settings: {} } as any, ctx.model!, apiKey, headers);
      // The SDK session's system prompt is pi-rpc's own (compat/DEVIATIONS.md): token counts are compared without it.
      const system = estimateTokens(session.messages[0]);
      ctx.ui.notify(JSON.stringify({
        cut, events, again, summary, withUsage, own,
        result: { ...result, firstKeptEntryId: index(result.firstKeptEntryId), tokensBefore: result.tokensBefore - system, estimatedTokensAfter: result.estimatedTokensAfter - system },
        entry: { type: entry.type, summary: entry.summary, tokensBefore: entry.tokensBefore - system, details: entry.details, fromHook: entry.fromHook ?? null, kept: index(entry.firstKeptEntryId), system: entry.systemMessage.role },
        context: session.messages.map((m: any) => m.role),
        compacting: session.isCompacting,
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("treesummary", {
    handler: async (_args, ctx) => {
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager: SettingsManager.inMemory({}), noTools: true } as any);
      await session.prompt("hello");
      await session.prompt("again");
      const sm = session.sessionManager;
      const ids = new Map<string, number>(sm.getEntries().map((e: any, i: number) => [e.id, i]));
      const users = sm.getEntries().filter((e: any) => e.type === "message" && e.message.role === "user");
      const collected = collectEntriesForBranchSummary(sm, sm.getLeafId(), users[1].id);
      const prepared = prepareBranchEntries(collected.entries, 0);
      const { apiKey, headers } = await ctx.modelRegistry.getApiKeyAndHeaders(ctx.model!) as any;
      const direct = await generateBranchSummary(collected.entries, { model: ctx.model!, apiKey, headers, customInstructions: "Only files.", replaceInstructions: true });
      const empty = await generateBranchSummary([], { model: ctx.model!, apiKey, headers });
      const moved: any = await session.navigateTree(users[1].id, { summarize: true, label: "back", customInstructions: "Be short." });
      const s = moved.summaryEntry;
      ctx.ui.notify(JSON.stringify({
        collected: { entries: collected.entries.map((e: any) => ids.get(e.id)), ancestor: ids.get(collected.commonAncestorId) ?? null },
        prepared: { roles: prepared.messages.map((m: any) => m.role), totalTokens: prepared.totalTokens, read: [...prepared.fileOps.read] },
        direct, empty,
        moved: { editorText: moved.editorText, cancelled: moved.cancelled },
        entry: { type: s.type, summary: s.summary, fromId: ids.get(s.fromId), parent: ids.get(s.parentId), details: s.details, fromHook: s.fromHook, usage: s.usage, label: sm.getLabel(s.id) ?? null },
        branch: sm.getBranch().map((e: any) => e.type),
        context: session.messages.map((m: any) => m.role),
        leafIsSummary: sm.getLeafId() === s.id,
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("cycle", {
    handler: async (_args, ctx) => {
      const shape = (r: any) => (r ? { model: `${r.model.provider}/${r.model.id}`, thinkingLevel: r.thinkingLevel, isScoped: r.isScoped } : null);
      const settingsManager = SettingsManager.inMemory({ defaultThinkingLevel: "low" } as any);
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, noTools: true } as any);
      const levels: string[] = [];
      session.subscribe((e: any) => { if (e.type === "thinking_level_changed") levels.push(e.level); });
      const all = [];
      for (const direction of ["forward", "forward", "backward"]) all.push(shape(await session.cycleModel(direction as any)));
      const persisted = shape(await session.cycleModel("forward", { persist: true }));
      const other = ctx.modelRegistry.find("fake", "fake-other")!;
      const scopedModels = [{ model: ctx.model!, thinkingLevel: "off" }, { model: other, thinkingLevel: "high" }];
      const { session: scopedSession } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager: SettingsManager.inMemory({}), scopedModels, noTools: true } as any);
      const scoped = [shape(await scopedSession.cycleModel()), shape(await scopedSession.cycleModel())];
      const { session: single } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager: SettingsManager.inMemory({}), scopedModels: [{ model: ctx.model! }], noTools: true } as any);
      ctx.ui.notify(JSON.stringify({
        all, persisted, scoped, single: shape(await single.cycleModel()), levels,
        default: [settingsManager.getDefaultProvider() ?? null, settingsManager.getDefaultModel() ?? null],
        entries: session.sessionManager.getEntries().map((e: any) => e.type === "model_change" ? e.modelId : e.type === "thinking_level_change" ? e.thinkingLevel : e.type),
      }), "info");
      for (const s of [session, scopedSession, single]) s.dispose();
    },
  });

  pi.registerCommand("members", {
    handler: async (_args, ctx) => {
      const settingsManager = SettingsManager.inMemory({});
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), settingsManager, noExtensions: true });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager, resourceLoader });
      await session.bindExtensions({});
      await session.prompt("hello");
      const sm = session.sessionManager;
      const user = sm.getEntries().find((e: any) => e.type === "message" && e.message.role === "user");
      const exported = session.exportToJsonl(path.join(ctx.cwd, "out", "branch.jsonl"));
      const lines = fs.readFileSync(exported, "utf8").trim().split("\n").map((l) => JSON.parse(l));
      const linked = lines.slice(1).every((e: any, i: number) => e.parentId === (i === 0 ? null : lines[i].id));
      const same = await session.navigateTree(sm.getLeafId()!);
      const moved = await session.navigateTree(user.id, { label: "start" });
      const after = { branch: sm.getBranch().map((e: any) => e.type), roles: session.messages.map((m: any) => m.role), label: sm.getLabel(user.id) ?? null };
      let missing = null;
      try { await session.navigateTree("nope"); } catch (e: any) { missing = e.message; }
      await session.reload();
      ctx.ui.notify(JSON.stringify({
        exported: [path.relative(ctx.cwd, exported), lines.map((e: any) => e.type), linked, lines[0].id === session.sessionId],
        same, moved, after, missing, prompt: session.systemPrompt.length > 0,
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("bash", {
    handler: async (_args, ctx) => {
      const settingsManager = SettingsManager.inMemory({ shellCommandPrefix: "GREETING=hi" });
      const { session } = await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model, settingsManager });
      const updates: any[] = [];
      session.subscribe((e: any) => { if (e.type === "bash_execution_update") updates.push([e.id ?? null, e.delta]); });
      const chunks: string[] = [];
      const shape = (r: any) => ({ ...r, fullOutputPath: r.fullOutputPath === undefined ? null : "<file>" });
      const colored = await session.executeBash("printf '\\033[31mred\\033[0m\\r\\n'; echo $GREETING; exit 3", (c: string) => chunks.push(c), { id: "b1" });
      const long = await session.executeBash("seq 1 3000");
      const file = long.fullOutputPath ?? "";
      // pi closes the file without waiting for its last write: wait for it (at most 5s).
      const lines = () => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").length : 0);
      for (let i = 0; i < 500 && lines() < 3000; i++) await new Promise((r) => setTimeout(r, 10));
      const fileRules = { dir: path.dirname(file) === os.tmpdir(), name: /^pi-bash-[0-9a-f]{16}\.log$/.test(path.basename(file)), lines: lines() };
      const hidden = await session.executeBash("echo secret", undefined, { excludeFromContext: true });
      const operations = { exec: async (command: string, cwd: string, { onData }: any) => { onData(Buffer.from(`remote ${command.split("\n").pop()} ${cwd === ctx.cwd}\n`)); return { exitCode: 0 }; } };
      const remote = await session.executeBash("uname", undefined, { operations });
      const pending = session.executeBash("sleep 5; echo late");
      const running = session.isBashRunning;
      session.abortBash();
      const aborted = await pending;
      const entries = session.sessionManager.getEntries().filter((e: any) => e.message?.role === "bashExecution")
        .map((e: any) => { const { timestamp, ...m } = e.message; return { ...shape(m), stamped: typeof timestamp === "number" }; });
      ctx.ui.notify(JSON.stringify({
        colored, chunks: chunks.join(""), updates: updates.filter((u) => u[0] === "b1").map((u) => u[1]).join(""),
        long: { ...shape(long), output: long.output.split("\n").slice(0, 2) }, fileRules, hidden, remote, running, aborted,
        idle: [session.isBashRunning, session.hasPendingBashMessages],
        entries: entries.map((e: any) => ({ ...e, output: e.output.length })), roles: session.messages.map((m: any) => m.role),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("html", {
    handler: async (_args, ctx) => {
      const failure = async (session: any, ...args: any[]) => { try { await session.exportToHtml(...args); return null; } catch (e: any) { return e.message; } };
      const holds = (html: string, text: string) => html.includes(text)
        || (html.match(/[A-Za-z0-9+/]{100,}={0,2}/g) ?? []).some((b) => Buffer.from(b, "base64").toString("utf8").includes(text));
      const memory = (await createAgentSession({ sessionManager: SessionManager.inMemory(ctx.cwd), model: ctx.model })).session;
      const inMemory = await failure(memory);
      memory.dispose();
      const { session } = await createAgentSession({ sessionManager: SessionManager.create(ctx.cwd), model: ctx.model });
      const empty = await failure(session);
      await session.prompt("please greet the html page");
      await session.executeBash("echo bash-was-here");
      const file = session.sessionFile!;
      const page = (p: string) => { const full = path.resolve(ctx.cwd, p); const html = fs.existsSync(full) ? fs.readFileSync(full, "utf8") : "";
        return { exists: html.length > 0, doctype: html.trimStart().toLowerCase().startsWith("<!doctype html"), user: holds(html, "please greet the html page"),
          assistant: holds(html, "Hello there."), bash: holds(html, "bash-was-here") }; };
      const byDefault = await session.exportToHtml();
      const absolute = await session.exportToHtml(path.join(ctx.cwd, "page.html"));
      const missingDir = await failure(session, path.join(ctx.cwd, "no-such-dir", "page.html"));
      ctx.ui.notify(JSON.stringify({
        inMemory, empty,
        byDefault: [byDefault === `pi-session-${path.basename(file, ".jsonl")}.html`, page(byDefault)],
        absolute: [absolute === path.join(ctx.cwd, "page.html"), page(absolute)],
        missingDir,
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("fork", {
    handler: async (_args, ctx) => {
      const factory = async ({ cwd, agentDir, sessionManager }: any) => {
        const services = await createAgentSessionServices({ cwd, agentDir, resourceLoaderOptions: { noExtensions: true } });
        return { ...(await createAgentSessionFromServices({ services, sessionManager, model: ctx.model })), services, diagnostics: [] };
      };
      const shape = (rt: any) => {
        const sm = rt.session.sessionManager;
        const ids = new Map<string, string>();
        const ref = (id: any) => (typeof id === "string" ? (ids.has(id) ? ids.get(id) : (ids.set(id, `e${ids.size}`), `e${ids.size - 1}`)) : id);
        return {
          entries: sm.getEntries().map((e: any) => [e.type, e.message?.role ?? e.label ?? null, ref(e.id), ref(e.parentId), e.targetId ? ref(e.targetId) : null]),
          leaf: ref(sm.getLeafId()),
          roles: rt.session.messages.map((m: any) => m.role),
          parent: sm.getHeader().parentSession ?? null,
          persisted: sm.isPersisted(),
          onDisk: sm.getSessionFile() ? fs.existsSync(sm.getSessionFile()) : null,
        };
      };
      const out: any = {};
      for (const persisted of [true, false]) {
        const sessionManager = persisted ? SessionManager.create(ctx.cwd) : SessionManager.inMemory(ctx.cwd);
        const runtime = await createAgentSessionRuntime(factory, { cwd: ctx.cwd, agentDir: getAgentDir(), sessionManager });
        await runtime.session.prompt("hello");
        const first = runtime.session.sessionFile ?? null;
        const entries = runtime.session.sessionManager.getEntries();
        const user = entries.find((e: any) => e.type === "message" && e.message.role === "user");
        const answer = entries.find((e: any) => e.type === "message" && e.message.role === "assistant");
        runtime.session.sessionManager.appendLabelChange(user.id, "greeting");
        const at = await runtime.fork(answer.id, { position: "at" });
        const afterAt = { ...shape(runtime), parent: shape(runtime).parent === first && first !== null };
        const before = await runtime.fork(runtime.session.sessionManager.getEntries().find((e: any) => e.type === "message" && e.message.role === "user").id);
        const afterBefore = shape(runtime);
        let bad = null;
        try { await runtime.fork(answer.id); } catch (e: any) { bad = e.message; }
        out[persisted ? "file" : "memory"] = { at, afterAt, before, afterBefore: { ...afterBefore, parent: afterBefore.parent !== null }, bad };
        await runtime.dispose();
      }
      ctx.ui.notify(JSON.stringify(out), "info");
    },
  });

  pi.registerCommand("runtime", {
    handler: async (_args, ctx) => {
      const seen: string[] = [];
      const factory = async ({ cwd, agentDir, sessionManager, sessionStartEvent }: any) => {
        seen.push(`${sessionStartEvent?.reason ?? "first"}:${sessionStartEvent?.previousSessionFile ? "file" : "none"}`);
        const services = await createAgentSessionServices({ cwd, agentDir, resourceLoaderOptions: { noExtensions: true } });
        return { ...(await createAgentSessionFromServices({ services, sessionManager, model: ctx.model })), services, diagnostics: services.diagnostics };
      };
      const runtime = await createAgentSessionRuntime(factory, { cwd: ctx.cwd, agentDir: getAgentDir(), sessionManager: SessionManager.create(ctx.cwd) });
      let rebound = 0;
      runtime.setRebindSession(async () => { rebound++; });
      await runtime.session.prompt("hello");
      const first = runtime.session.sessionFile!;
      await runtime.newSession({ parentSession: first, setup: async (sm: any) => { sm.appendCustomEntry("marker", { n: 1 }); } });
      const second = runtime.session;
      const fresh = { other: second.sessionFile !== first, sameDir: path.dirname(second.sessionFile!) === path.dirname(first), parent: second.sessionManager.getHeader().parentSession === first, messages: second.messages.length, entries: second.sessionManager.getEntries().map((e: any) => e.type) };
      // `withSession` gets the new session's command context (pi's replaced-session context), not the session.
      let given: any = null;
      await runtime.switchSession(first, {
        withSession: async (c: any) => {
          given = {
            session: typeof c.prompt === "function" || "agent" in c,
            members: ["sendMessage", "sendUserMessage", "newSession", "fork", "switchSession", "waitForIdle", "isIdle", "abort", "getContextUsage"].map((k) => typeof c[k]),
            cwd: c.cwd === ctx.cwd,
            file: c.sessionManager.getSessionFile() === first,
            model: c.model?.id ?? null,
            idle: c.isIdle(),
          };
        },
      });
      const back = { file: runtime.session.sessionFile === first, roles: runtime.session.messages.map((m: any) => m.role), given };
      const copy = path.join(ctx.cwd, "exported.jsonl");
      fs.copyFileSync(first, copy);
      await runtime.importFromJsonl(copy);
      const imported = { dir: path.dirname(runtime.session.sessionFile!) === path.dirname(first), name: path.basename(runtime.session.sessionFile!), roles: runtime.session.messages.map((m: any) => m.role) };
      let missing = null;
      try { await runtime.importFromJsonl(path.join(ctx.cwd, "nope.jsonl")); } catch (e: any) { missing = [e.name, e.message.replace(ctx.cwd, "<cwd>")]; }
      await runtime.dispose();
      ctx.ui.notify(JSON.stringify({ seen, rebound, cwd: runtime.cwd === ctx.cwd, fresh, back, imported, missing }), "info");
    },
  });
}
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
    std::fs::write(path, text).expect("write");
}

/// The files each part reads: a project `proj/` of the sandbox with its own settings and resources,
/// the agent directory's skills, prompts, theme and APPEND_SYSTEM.md.
fn prepare(sb: &Sandbox, node: &Path, dir: &Path, reference_pkg: &Path) {
    host_settings(
        sb,
        node,
        dir,
        json!({"theme": "dark", "compaction": {"reserveTokens": 1000}, "defaultTools": ["read", "bash", "grep"],
               "retry": {"baseDelayMs": 20, "maxDelayMs": 5}, "httpIdleTimeoutMs": "disabled"}),
    );
    write_module(sb, "sdk-services.ts", SDK_SERVICES);
    // A reasoning model: the settings' thinking level is kept, not clamped to "off".
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    let cwd = sb.cwd.path();
    let agent = sb.agent_dir.path();
    let proj = cwd.join("proj");
    write(
        &proj.join(".pi/settings.json"),
        &json!({"defaultTools": ["-bash"], "followUpMode": "all", "compaction": {"keepRecentTokens": 7}}).to_string(),
    );
    write(&proj.join("AGENTS.md"), "Project rules: tabs.\n");
    write(&proj.join(".pi/SYSTEM.md"), "You are a terse project bot.\n");
    write(&agent.join("APPEND_SYSTEM.md"), "Always sign as Bot.\n");
    write(
        &proj.join(".pi/skills/tidy-skill/SKILL.md"),
        "---\nname: tidy-skill\ndescription: Tidies things.\n---\nTidy.\n",
    );
    write(&agent.join("skills/user-skill/SKILL.md"), "---\ndescription: The user's skill.\n---\nUse it.\n");
    write(&cwd.join("more-skills/extra/SKILL.md"), "---\nname: extra\ndescription: An extra skill.\n---\nMore.\n");
    write(&cwd.join("more-skills/broken/SKILL.md"), "---\nname: broken\n---\nNo description.\n");
    write(&proj.join(".pi/prompts/fix.md"), "---\ndescription: Fix it\nargument-hint: <what>\n---\nFix $1 now.\n");
    write(&agent.join("prompts/review.md"), "Review the code carefully.\n");
    let theme =
        std::fs::read_to_string(reference_pkg.join("dist/modes/interactive/theme/dark.json")).expect("pi's dark theme");
    let mut theme: Value = serde_json::from_str(&theme).expect("theme json");
    theme["name"] = json!("my-theme");
    write(&agent.join("themes/my-theme.json"), &theme.to_string());
}

/// What `/<command>` notified in one program, sandbox paths replaced by `<cwd>`, `<agent>`, `<home>`.
async fn run(reference: bool, command: &str) -> Option<Value> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let package = cli.parent().and_then(|d| d.parent()).expect("the reference package").to_path_buf();
    let sb = Sandbox::with_server().await;
    prepare(&sb, &node, &dir, &package);
    let mut pi = if reference {
        spawn_reference(&sb, &node, &cli)
    } else {
        sb.spawn_with_env(&["--no-session"], &[("PI_RPC_DOCS_DIR", &package)])
    };
    let text = notified_text(&mut pi, &sb, command).await;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}")))
}

/// One program's side of an extension command run side by side: a sandbox
/// with the fake model server, the host's settings, `module` (file, source)
/// written, the fake provider's models when `models` gives their extra fields,
/// `prepare` run on the sandbox before the program starts (replies, files),
/// then pi-rpc (`--no-session`) or pi 1.6.0. `None` without node 22, the host
/// or the reference.
pub(crate) async fn start_module(
    reference: bool,
    module: (&str, &str),
    models: Option<Value>,
    prepare: impl FnOnce(&Sandbox),
) -> Option<(Sandbox, Pi)> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, module.0, module.1);
    if let Some(models) = models {
        sb.write_models(&sb.server().base_url(), models);
    }
    prepare(&sb);
    let pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
    Some((sb, pi))
}

/// The JSON value `/<command>` notified ([`notified_text`]).
pub(crate) async fn notified_json(pi: &mut Pi, sb: &Sandbox, command: &str) -> Value {
    let text = notified_text(pi, sb, command).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("/{command} notified {text}: {e}"))
}

/// Prompt `/<command>` (the fake server answers any model call with
/// "Hello there.") and return the text it notified, with no
/// `extension_error` on the way; sandbox paths as `<cwd>`, `<agent>`,
/// `<home>`, the fake server's address as `<server>`.
pub(crate) async fn notified_text(pi: &mut Pi, sb: &Sandbox, command: &str) -> String {
    notified_where(pi, sb, command, |_| true).await.pop().unwrap_or_default()
}

/// Prompt `/<command>` as [`notified_text`] does; the texts notified until one `wanted` accepts, that one last.
pub(crate) async fn notified_where(pi: &mut Pi, sb: &Sandbox, command: &str, wanted: fn(&str) -> bool) -> Vec<String> {
    sb.server().push(Reply::text("Hello there."));
    pi.send(json!({"id": "c", "type": "prompt", "message": format!("/{command}")})).await;
    let lines = pi.until(|v| v["method"] == "notify" && wanted(v["message"].as_str().unwrap_or_default())).await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let notified = lines.iter().filter(|v| v["method"] == "notify").filter_map(|v| v["message"].as_str());
    notified
        .map(|message| {
            let mut text = message.to_string();
            for (dir, name) in [(sb.cwd.path(), "<cwd>"), (sb.agent_dir.path(), "<agent>"), (sb.home.path(), "<home>")]
            {
                text = text.replace(&dir.display().to_string(), name);
            }
            text.replace(&sb.server().base_url(), "<server>")
        })
        .collect()
}

/// `run`'s value for pi-rpc, then for pi 1.6.0; `None` without the tools.
pub(crate) async fn side_by_side<F, R>(run: F, command: &str) -> Option<(Value, Value)>
where
    F: Fn(bool, String) -> R,
    R: std::future::Future<Output = Option<Value>>,
{
    let ours = run(false, command.to_string()).await?;
    let theirs = run(true, command.to_string()).await?;
    Some((ours, theirs))
}

/// pi-rpc's note of `/<command>`, then pi 1.6.0's.
async fn both(command: &str) -> Option<(Value, Value)> {
    side_by_side(|reference, command| async move { run(reference, &command).await }, command).await
}

#[tokio::test]
async fn settings_manager_reads_and_writes_pis_files() {
    let Some((ours, theirs)) = both("settings").await else { return };
    // Merged as pi merges (project over user, `defaultTools` changes applied), old keys migrated.
    let before = &ours["before"];
    assert_eq!(before["getDefaultTools"], json!(["read", "grep"]), "{before}");
    assert_eq!(before["getFollowUpMode"], "all", "{before}");
    assert_eq!(before["getCompactionSettings"], json!({"enabled": true, "reserveTokens": 1000, "keepRecentTokens": 7}));
    assert_eq!(before["getProviderRetrySettings"]["maxRetryDelayMs"], 5, "{before}");
    assert_eq!(before["getHttpIdleTimeoutMs"], 0, "{before}");
    // Each setter wrote its key into the file as the other program left it.
    let after = &ours["after"];
    assert_eq!(after["user"]["defaultThinkingLevel"], "low", "{after}");
    assert_eq!(after["user"]["external"], 1, "{after}");
    assert_eq!(after["project"]["skills"], json!(["extra-skills"]), "{after}");
    assert_eq!(ours["untrusted"]["refused"], "Project is not trusted; refusing to write project settings");
    for key in ["before", "after", "overridden", "memory", "untrusted"] {
        assert_eq!(ours[key], theirs[key], "{key}: pi-rpc, then pi 1.6.0");
    }
}

#[tokio::test]
async fn model_registry_answers_from_pi_rpcs_catalog() {
    let Some((ours, theirs)) = both("models").await else { return };
    assert_eq!(ours["all"], json!(["fake-model", "fake-other"]), "{ours}");
    assert_eq!(ours["key"]["apiKey"], "test-key-123", "{ours}");
    assert_eq!(ours["sameAsCtx"], true, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn resource_loader_finds_what_pi_finds() {
    let Some((ours, theirs)) = both("resources").await else { return };
    let names: Vec<&str> = ours["full"]["skills"]["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["tidy-skill", "user-skill", "extra"], "{ours}");
    assert_eq!(ours["full"]["system"], "You are a terse project bot.\n", "{ours}");
    assert_eq!(ours["full"]["themes"], json!(["my-theme"]), "{ours}");
    assert_eq!(ours["bare"]["system"], "Be brief.", "{ours}");
    for part in ["full", "bare"] {
        for key in [
            "skills",
            "prompts",
            "agents",
            "system",
            "systemSource",
            "append",
            "appendSources",
            "themes",
            "themeDiagnostics",
            "extensions",
        ] {
            assert_eq!(ours[part][key], theirs[part][key], "{part}.{key}: pi-rpc, then pi 1.6.0");
        }
    }
}

#[tokio::test]
async fn create_agent_session_honours_given_services() {
    let Some((ours, theirs)) = both("sdkopts").await else { return };
    assert_eq!(ours["thinkingLevel"], "low", "{ours}");
    assert_eq!(ours["tools"], json!(["read", "grep"]), "{ours}");
    assert_eq!(ours["queues"], json!(["all", "all"]), "{ours}");
    assert_eq!(ours["prompt"], json!([true, true, true, true]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_session_runtime_replaces_its_session_as_pi_does() {
    let Some((ours, theirs)) = both("runtime").await else { return };
    assert_eq!(ours["seen"], json!(["first:none", "new:file", "resume:file", "resume:file"]), "{ours}");
    assert_eq!(ours["fresh"]["entries"], json!(["model_change", "thinking_level_change", "custom"]), "{ours}");
    assert_eq!(ours["back"]["roles"], json!(["system", "user", "assistant"]), "{ours}");
    assert_eq!(ours["back"]["given"]["session"], false, "withSession's context is no AgentSession: {ours}");
    assert_eq!(ours["imported"]["name"], "exported.jsonl", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn sdk_session_members_work_as_in_pi() {
    let Some((ours, theirs)) = both("members").await else { return };
    assert_eq!(ours["moved"]["editorText"], "hello", "{ours}");
    // Back at the system message, the label on top.
    assert_eq!(ours["after"]["branch"], json!(["model_change", "thinking_level_change", "message", "label"]), "{ours}");
    assert_eq!(ours["exported"][2], true, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_compacts_as_pi_does() {
    let Some((ours, theirs)) = both("compaction").await else { return };
    let events = json!([
        "compaction_start:manual:",
        "compaction_end:manual:",
        "compaction_start:manual:",
        "compaction_end:manual:Compaction failed: Already compacted"
    ]);
    assert_eq!(ours["events"], events, "{ours}");
    assert_eq!(ours["again"], "Already compacted", "{ours}");
    // A split turn: the history summary, pi's separator, the turn's prefix summary.
    assert!(ours["result"]["summary"].as_str().is_some_and(|s| s.contains("**Turn Context (split turn):**")), "{ours}");
    assert_eq!(ours["entry"]["type"], "compaction", "{ours}");
    assert_eq!(ours["own"]["details"], json!({"readFiles": ["a.txt"], "modifiedFiles": ["b.txt"]}), "{ours}");
    // `tokensBefore` is the last reply's reported input (the fake server's count of a request
    // carrying pi-rpc's own system prompt) plus later messages: the same within the server's rounding.
    let (mut ours, mut theirs) = (ours, theirs);
    for part in ["result", "entry"] {
        let (a, b) = (ours[part]["tokensBefore"].take(), theirs[part]["tokensBefore"].take());
        let (a, b) = (a.as_i64().unwrap_or(-100), b.as_i64().unwrap_or(100));
        assert!((a - b).abs() <= 1 && a > 0, "{part}.tokensBefore: pi-rpc {a}, pi {b}");
    }
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_summarizes_the_branch_it_leaves_as_pi_does() {
    let Some((ours, theirs)) = both("treesummary").await else { return };
    assert_eq!(ours["moved"]["editorText"], "again", "{ours}");
    assert!(
        ours["entry"]["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("The user explored a different conversation branch")),
        "{ours}"
    );
    assert_eq!(ours["entry"]["label"], "back", "{ours}");
    assert_eq!(ours["direct"]["error"], Value::Null, "{ours}");
    // The summary sits where the user message's parent was, the label on it.
    let branch =
        json!(["model_change", "thinking_level_change", "message", "message", "message", "branch_summary", "label"]);
    assert_eq!(ours["branch"], branch, "{ours}");
    assert_eq!(ours["empty"], json!({"summary": "No content to summarize"}), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_cycles_models_as_pi_does() {
    let Some((ours, theirs)) = both("cycle").await else { return };
    assert_eq!(ours["all"][0]["model"], "fake/fake-other", "{ours}");
    assert_eq!(ours["scoped"][0]["model"], "fake/fake-other", "{ours}");
    assert_eq!(ours["scoped"][0]["isScoped"], true, "{ours}");
    assert_eq!(ours["single"], Value::Null, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_session_runtime_forks_as_pi_does() {
    let Some((ours, theirs)) = both("fork").await else { return };
    assert_eq!(ours["file"]["before"]["selectedText"], "hello", "{ours}");
    assert_eq!(ours["file"]["afterAt"]["roles"], json!(["system", "user", "assistant"]), "{ours}");
    assert_eq!(ours["file"]["bad"], "Invalid entry ID for forking", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_runs_bash_as_pi_does() {
    let Some((ours, theirs)) = both("bash").await else { return };
    // ANSI sequences and carriage returns gone, the settings' prefix applied, the exit code kept.
    assert_eq!(ours["colored"]["output"], "red\nhi\n", "{ours}");
    assert_eq!(ours["colored"]["exitCode"], 3, "{ours}");
    assert_eq!(ours["chunks"], ours["updates"], "{ours}");
    // 3000 lines: the last 2000 kept, all of them in pi's temp file.
    assert_eq!(ours["long"]["output"], json!(["1001", "1002"]), "{ours}");
    assert_eq!(ours["fileRules"], json!({"dir": true, "name": true, "lines": 3000}), "{ours}");
    assert_eq!(ours["remote"]["output"], "remote uname true\n", "{ours}");
    assert_eq!(ours["aborted"]["cancelled"], true, "{ours}");
    assert_eq!(ours["entries"][2]["excludeFromContext"], true, "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_exports_html_as_pi_does() {
    let Some((ours, theirs)) = both("html").await else { return };
    assert_eq!(ours["inMemory"], "Cannot export in-memory session to HTML", "{ours}");
    assert_eq!(ours["empty"], "Nothing to export yet - start a conversation first", "{ours}");
    let written = json!({"exists": true, "doctype": true, "user": true, "assistant": true, "bash": true});
    assert_eq!(ours["byDefault"], json!([true, written]), "{ours}");
    assert_eq!(ours["absolute"], json!([true, written]), "{ours}");
    assert_eq!(ours["missingDir"], "ENOENT: no such file or directory, open '<cwd>/no-such-dir/page.html'", "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
