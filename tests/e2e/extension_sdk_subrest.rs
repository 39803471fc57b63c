//! pi's SDK session where it last differed, side by side with pi 1.6.0
//! (one extension command per part, helpers of extension_sdk_runner.rs and
//! extension_sdk_services.rs, JSON summaries compared whole):
//! - `createAgentSession()` without a `resourceLoader` loads pi's default
//!   loader of its cwd and agent directory: a custom `SYSTEM.md`, an
//!   `APPEND_SYSTEM.md`, a skill and a template written after the running
//!   session started, the `AGENTS.md` of another cwd, and the discovered
//!   extensions (this very module, loaded again inside);
//! - a summary's dropped stream is retried (compaction and branch summary),
//!   with the `summarization_retry_*` events;
//! - a virtual model is routed with reason `retry` (and the failed answer)
//!   when a failed answer is asked again, and the compaction threshold is
//!   checked against the model it routes to;
//! - `ModelRuntime.login(provider, "api_key")` asks for each provider's key
//!   in pi's words;
//! - `tool_search` without a match, in an SDK session and in the main session.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::extension_builtin_factories::start;
use crate::extension_host::write_module;
use crate::extension_sdk_runner::run_module;
use crate::extension_sdk_services::side_by_side;
use crate::harness::Sandbox;
use crate::mcp::{result, result_text, results};

const SDK_SUBREST: &str = r#"import * as fs from "node:fs";
import * as path from "node:path";
import {
  createAgentSession, createToolSearchExtension, DefaultResourceLoader, getAgentDir, ModelRuntime, SessionManager, SettingsManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const long = (word: string) => Array(60).fill(word).join(" ");
const text = (m: any) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((b: any) => b.text ?? b.type).join("|")).slice(0, 40);

/** A session over a loader of `factories` only, with these settings. */
async function sessionWith(ctx: any, settings: any, factories: any[] = []) {
  const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: factories });
  await resourceLoader.reload();
  const settingsManager = SettingsManager.inMemory(settings);
  const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, settingsManager, model: ctx.model, noTools: true } as any);
  const errors: string[] = [];
  await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
  return { session, errors };
}

/** The summary events, compactions and messages `session` shows its subscribers, into `seen`. */
function watch(session: any, seen: any[]) {
  session.subscribe((e: any) => {
    if (e.type === "summarization_retry_scheduled") seen.push([e.type, e.attempt, e.maxAttempts, e.delayMs, e.errorMessage]);
    if (e.type === "summarization_retry_attempt_start") seen.push([e.type, e.source, e.reason ?? null]);
    if (e.type === "summarization_retry_finished") seen.push([e.type]);
    if (e.type === "compaction_start") seen.push([e.type, e.reason]);
    if (e.type === "compaction_end") seen.push([e.type, e.reason, e.aborted, e.willRetry, e.errorMessage ?? null, e.result?.summary ?? null]);
    if (e.type === "auto_retry_start") seen.push([e.type, e.attempt, e.errorMessage]);
    if (e.type === "message_end") seen.push([e.type, e.message.role, e.message.stopReason ?? null]);
  });
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("resources", {
    handler: async (_args, ctx) => {
      // Written after the running session started: only a loader made now finds them.
      const agentDir = getAgentDir();
      fs.mkdirSync(path.join(agentDir, "skills", "late-skill"), { recursive: true });
      fs.writeFileSync(path.join(agentDir, "skills", "late-skill", "SKILL.md"), "---\nname: late-skill\ndescription: A skill written late\n---\nLATE SKILL BODY\n");
      fs.mkdirSync(path.join(agentDir, "prompts"), { recursive: true });
      fs.writeFileSync(path.join(agentDir, "prompts", "late.md"), "---\ndescription: a late template\n---\nLATE TEMPLATE $1");
      fs.writeFileSync(path.join(agentDir, "SYSTEM.md"), "CUSTOM-SYSTEM prompt of the agent directory");
      fs.writeFileSync(path.join(agentDir, "APPEND_SYSTEM.md"), "APPEND-MARKER appended text");
      const cwd = path.join(ctx.cwd, "elsewhere");
      fs.mkdirSync(cwd, { recursive: true });
      fs.writeFileSync(path.join(cwd, "AGENTS.md"), "AGENTS-MARKER context of another cwd");
      const { session, extensionsResult } = await createAgentSession({ cwd, sessionManager: SessionManager.inMemory(cwd), model: ctx.model, tools: ["read"] } as any);
      const prompt = session.systemPrompt;
      const loader: any = session.resourceLoader;
      ctx.ui.notify(JSON.stringify({
        custom: prompt.startsWith("CUSTOM-SYSTEM"),
        has: ["APPEND-MARKER", "AGENTS-MARKER", "late-skill", "A skill written late"].filter((m) => prompt.includes(m)),
        skills: loader.getSkills().skills.map((s: any) => s.name),
        prompts: loader.getPrompts().prompts.map((p: any) => p.name),
        agentsFiles: loader.getAgentsFiles().agentsFiles.map((f: any) => f.path),
        extensions: extensionsResult.extensions.map((e: any) => path.basename(e.path)),
        extensionErrors: extensionsResult.errors,
        commands: [...(extensionsResult.extensions[0]?.commands?.keys() ?? [])].sort(),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("summaryretry", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const { session, errors } = await sessionWith(ctx, { retry: { maxRetries: 2, baseDelayMs: 1 }, compaction: { keepRecentTokens: 150 } });
      watch(session, seen);
      await session.prompt(long("one"));
      await session.prompt(long("two"));
      await session.compact();
      const sm: any = session.sessionManager;
      const firstUser = sm.getEntries().find((e: any) => e.type === "message" && e.message.role === "user");
      const navigated = await session.navigateTree(firstUser.id, { summarize: true });
      const summary = sm.getEntries().find((e: any) => e.type === "branch_summary");
      ctx.ui.notify(JSON.stringify({
        seen, errors, cancelled: navigated.cancelled, editorText: navigated.editorText ?? null,
        branchSummary: summary ? summary.summary.includes("BRANCH SUMMARY") : null,
        entries: sm.getEntries().map((x: any) => x.type),
      }), "info");
      session.dispose();
    },
  });

  const router = (seen: any[]) => (sub: ExtensionAPI) => {
    sub.registerTool({ name: "noop", label: "noop", description: "Does nothing", parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "nothing done" }], details: {} }) } as any);
    sub.registerVirtualModel({
      provider: "sub-virtual", id: "auto", name: "Auto",
      route: (request: any, rctx: any) => {
        const failed = request.failed;
        seen.push(["route", request.reason, request.previous?.model?.id ?? null, failed ? [failed.model.id, failed.message.stopReason, failed.message.errorMessage] : null,
          request.messages.map((m: any) => m.role).join(",")]);
        return { model: rctx.modelRegistry.find("fake", "fake-model"), thinkingLevel: "off" };
      },
    } as any);
  };

  pi.registerCommand("virtualretry", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const { session, errors } = await sessionWith(ctx, { retry: { maxRetries: 1, baseDelayMs: 1 } }, [router(seen)]);
      watch(session, seen);
      await session.setModel((session as any).extensionRunner.createContext().modelRegistry.find("sub-virtual", "auto"));
      await session.prompt("hello");
      ctx.ui.notify(JSON.stringify({ seen, errors, messages: session.messages.map((m: any) => [m.role, text(m)]) }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("virtualthreshold", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      // 1000 tokens left below the fake model's window: the tool call's usage (1100) is over it.
      const compaction = { reserveTokens: ctx.model.contextWindow - 1000, keepRecentTokens: 150 };
      const { session, errors } = await sessionWith(ctx, { retry: { enabled: false }, compaction }, [router(seen)]);
      watch(session, seen);
      await session.setModel((session as any).extensionRunner.createContext().modelRegistry.find("sub-virtual", "auto"));
      session.setActiveToolsByName(["noop"]);
      await session.prompt(long("one"));
      await session.prompt(long("go"));
      ctx.ui.notify(JSON.stringify({ seen, errors, entries: session.sessionManager.getEntries().map((x: any) => x.type) }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("keyprompts", {
    handler: async (_args, ctx) => {
      const dir = path.join(ctx.cwd, "keys");
      fs.mkdirSync(dir, { recursive: true });
      const authPath = path.join(dir, "auth.json");
      const modelsPath = path.join(dir, "models.json");
      fs.writeFileSync(modelsPath, JSON.stringify({ providers: { mine: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", models: [{ id: "mine-1" }] } } }));
      const rt = await ModelRuntime.create({ authPath, modelsPath });
      const prompts: any[] = [];
      for (const provider of ["groq", "openai", "anthropic", "huggingface", "github-copilot", "mine"]) {
        await rt.login(provider, "api_key", {
          prompt: async (p: any) => { prompts.push([provider, p.type, p.message]); return `key-${provider}`; },
          notify: () => {},
        } as any);
      }
      ctx.ui.notify(JSON.stringify({ prompts, stored: Object.keys(JSON.parse(fs.readFileSync(authPath, "utf8"))).sort() }), "info");
    },
  });

  pi.registerCommand("nomatch", {
    handler: async (_args, ctx) => {
      const deferred = (sub: ExtensionAPI) => {
        sub.registerTool({ name: "weather_forecast", label: "weather", description: "Forecasts the weather of a city", parameters: Type.Object({}), exposure: "deferred",
          execute: async () => ({ content: [{ type: "text", text: "sunny" }], details: {} }) } as any);
      };
      const { session, errors } = await sessionWith(ctx, {}, [createToolSearchExtension(), deferred]);
      session.setActiveToolsByName(["tool_search"]);
      const results: any[] = [];
      session.subscribe((e: any) => { if (e.type === "tool_execution_end") results.push([e.toolName, e.isError, e.result.content.map((c: any) => c.text), e.result.details ?? null]); });
      await session.prompt("find a zebra tool");
      ctx.ui.notify(JSON.stringify({ errors, results, active: session.getActiveToolNames() }), "info");
      session.dispose();
    },
  });
}
"#;

/// pi-rpc's note of `/<command>`, then pi 1.6.0's, the fake model giving `replies`.
async fn both(command: &str, replies: &[Reply]) -> Option<(Value, Value)> {
    let module = ("sdk-subrest.ts", SDK_SUBREST);
    side_by_side(|reference, command| async move { run_module(reference, module, &command, replies).await }, command)
        .await
}

/// The entries of `note["seen"]` of one type (the first element of each).
fn seen_of(note: &Value, kind: &str) -> Vec<Value> {
    note["seen"].as_array().map_or(Vec::new(), |s| s.iter().filter(|e| e[0] == kind).cloned().collect())
}

fn busy() -> Reply {
    Reply::openai_error(503, "busy", "server_error")
}

#[tokio::test]
async fn an_sdk_session_without_a_loader_loads_pis_default_resources() {
    let Some((ours, theirs)) = both("resources", &[]).await else { return };
    // The files written after start-up and the other cwd's AGENTS.md are in the sub-session's prompt.
    assert_eq!(ours["custom"], true, "{ours}");
    assert_eq!(ours["has"], json!(["APPEND-MARKER", "AGENTS-MARKER", "late-skill", "A skill written late"]), "{ours}");
    assert_eq!(ours["skills"], json!(["late-skill"]), "{ours}");
    assert_eq!(ours["prompts"], json!(["late"]), "{ours}");
    // The discovered extension (this module) is loaded again inside, as pi loads it.
    assert_eq!(ours["extensions"], json!(["sdk-subrest.ts"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_sessions_dropped_summary_streams_are_retried_as_pis() {
    let replies = [
        Reply::text(&"alpha ".repeat(60)).usage(500, 100, 0),
        Reply::text(&"beta ".repeat(60)).usage(700, 100, 0),
        busy(),
        // Keeping 150 tokens splits the second turn: one summary, of its prefix.
        Reply::text("PREFIX SUMMARY"),
        busy(),
        Reply::text("BRANCH SUMMARY"),
    ];
    let Some((ours, theirs)) = both("summaryretry", &replies).await else { return };
    // One retry for the compaction (source and reason told), one for the branch summary.
    let scheduled = seen_of(&ours, "summarization_retry_scheduled");
    assert_eq!(scheduled.len(), 2, "{ours}");
    assert_eq!((&scheduled[0][1], &scheduled[0][2]), (&json!(1), &json!(2)), "{ours}");
    assert_eq!(
        seen_of(&ours, "summarization_retry_attempt_start"),
        [
            json!(["summarization_retry_attempt_start", "compaction", "manual"]),
            json!(["summarization_retry_attempt_start", "branchSummary", null])
        ],
        "{ours}"
    );
    assert_eq!(seen_of(&ours, "summarization_retry_finished").len(), 2, "{ours}");
    let ends = seen_of(&ours, "compaction_end");
    assert_eq!(ends.len(), 1, "{ours}");
    assert_eq!(ends[0][4], Value::Null, "{ours}");
    assert_eq!(ours["branchSummary"], true, "{ours}");
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_virtual_model_is_routed_for_a_retry_with_the_failed_answer_as_in_pi() {
    let replies = [busy(), Reply::text("Recovered.")];
    let Some((ours, theirs)) = both("virtualretry", &replies).await else { return };
    let routes = seen_of(&ours, "route");
    assert_eq!(routes.len(), 2, "{ours}");
    assert_eq!(routes[0][1], "user", "{ours}");
    // The retry: its reason, and the failed answer of the physical model (no longer among the messages).
    assert_eq!(routes[1][1], "retry", "{ours}");
    assert_eq!(routes[1][3][0], "fake-model", "{ours}");
    assert_eq!(routes[1][3][1], "error", "{ours}");
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_virtual_selection_compacts_against_the_routed_models_threshold_as_in_pi() {
    let replies = [
        // Long enough for the kept 150 tokens to cut inside the first turn.
        Reply::text(&"alpha ".repeat(300)).usage(100, 10, 0),
        Reply::tool_call("call_1", "noop", "{}").usage(900, 200, 0),
        Reply::text("HISTORY SUMMARY").usage(50, 5, 0),
        Reply::text("PREFIX SUMMARY").usage(50, 5, 0),
        Reply::text("done").usage(300, 10, 0),
    ];
    let Some((ours, theirs)) = both("virtualthreshold", &replies).await else { return };
    // Compacted between the tool call and the next request, which the router had already routed.
    let ends = seen_of(&ours, "compaction_end");
    assert_eq!(ends.len(), 1, "{ours}");
    assert_eq!(ends[0][1], "threshold", "{ours}");
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_api_key_login_asks_in_pis_words_per_provider() {
    let Some((ours, theirs)) = both("keyprompts", &[]).await else { return };
    let asked: Vec<&str> =
        ours["prompts"].as_array().map_or(Vec::new(), |p| p.iter().filter_map(|p| p[2].as_str()).collect());
    assert_eq!(
        asked,
        [
            "Enter Groq API key",
            "Enter OpenAI API key",
            "Enter Anthropic API key",
            "Enter Hugging Face token",
            "Enter GitHub Copilot token",
            "Enter API key"
        ],
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn tool_search_without_a_match_answers_as_pis_in_an_sdk_session() {
    let replies = [Reply::tool_call("call_1", "tool_search", r#"{"query":"zebra"}"#), Reply::text("None.")];
    let Some((ours, theirs)) = both("nomatch", &replies).await else { return };
    assert_eq!(
        ours["results"],
        json!([["tool_search", false, ["No matching tools found."], {"loaded": []}]]),
        "{ours}"
    );
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

/// The main session's `tool_search` (pi's factory, activated) without a
/// match and with a blank query: each result's error flag and text.
const MAIN_SEARCH: &str = r#"import { createToolSearchExtension } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  createToolSearchExtension()(pi);
  pi.registerCommand("search-on", {
    handler: async (_args, ctx) => {
      pi.setActiveTools([...pi.getActiveTools(), "tool_search"]);
      ctx.ui.notify("on", "info");
    },
  });
}
"#;

async fn main_session_search(reference: bool) -> Option<Vec<(bool, String)>> {
    let sb = Sandbox::with_server().await;
    write_module(&sb, "main-search.ts", MAIN_SEARCH);
    let mut pi = start(&sb, reference, &[])?;
    pi.send(json!({"id": "t", "type": "prompt", "message": "/search-on"})).await;
    pi.until(|v| v["method"] == "notify").await;
    sb.server().push(Reply::tool_calls([
        FakeToolCall::new("c1", "tool_search", r#"{"query":"zebra unicorn"}"#),
        FakeToolCall::new("c2", "tool_search", r#"{"query":"   "}"#),
    ]));
    sb.server().set_fallback(Reply::text("done"));
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    let found = results(&lines);
    pi.close_stdin();
    Some(
        ["c1", "c2"]
            .iter()
            .map(|id| {
                let r = result(&found, id);
                (r["isError"] == true, result_text(r))
            })
            .collect(),
    )
}

#[tokio::test]
async fn tool_search_without_a_match_answers_as_pis_in_the_main_session() {
    let Some(ours) = main_session_search(false).await else { return };
    let Some(theirs) = main_session_search(true).await else { return };
    assert_eq!(ours[0], (false, "No matching tools found.".to_string()), "{ours:?}");
    assert_eq!(ours[1], (true, "query must not be empty".to_string()), "{ours:?}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
