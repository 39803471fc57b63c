//! What an SDK session's extensions see of its model calls and context,
//! side by side with pi 1.6.0: `provider_stream_event` for each parsed
//! event of the sub-session's streams (with the model's provider, API and
//! id); `turn_end` boundary entries of type `context_edit` (a message's
//! content replaced in what the model is sent next) and `compaction` (the
//! extension's summary written, `tokensBefore` pi's estimate), an invalid
//! draft reported and dropped, and `context.contextEntries` as pi's
//! projection (`{sourceEntry, messages}`); and a `context` handler's
//! changed conversation sent after the prompt replayed as one system
//! message. Each part is an extension command that notifies a JSON summary
//! (helpers of extension_sdk_runner.rs); pi-rpc's is compared with pi
//! 1.6.0's whole.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::run_module;
use crate::extension_sdk_services::side_by_side;

const SDK_SUBSTREAM: &str = r#"import {
  createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager, SettingsManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** An SDK session over `factory`'s extension (no tools of its own), bound with an error listener. */
async function subSession(ctx: any, factory: (sub: ExtensionAPI) => void, errors: string[]) {
  const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [factory] });
  await resourceLoader.reload();
  const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, model: ctx.model, noTools: true } as any);
  await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
  return session;
}

/** A message's text, briefly. */
const text = (m: any) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((b: any) => b.text ?? b.type).join("|"));

export default function (pi: ExtensionAPI) {
  pi.registerCommand("streamed", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const errors: string[] = [];
      const session = await subSession(ctx, (sub) => {
        // The prompt's token count is the fake server's count of the request, whose system prompt is each program's own.
        sub.on("provider_stream_event", (e: any) => {
          const { usage, ...data } = e.data;
          seen.push([e.type, e.provider, e.api, e.model, data, usage ? Object.keys(usage) : usage]);
        });
      }, errors);
      await session.prompt("hi");
      ctx.ui.notify(JSON.stringify({ seen, errors, messages: session.messages.map((m: any) => [m.role, text(m)]) }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("edited", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const errors: string[] = [];
      let sm: any;
      const at = (id: string | undefined) => (id === undefined ? null : sm.getEntries().findIndex((x: any) => x.id === id));
      const projected = (e: any) => e.context.contextEntries.map((p: any) => [p.sourceEntry.type, at(p.sourceEntry.id), p.messages.map(text)]);
      const session = await subSession(ctx, (sub) => {
        sub.on("context", (e: any) => { seen.push(["context", e.messages.map((m: any) => [m.role, text(m)])]); });
        // A draft naming no entry: reported, and the next handler's entries stand.
        sub.on("turn_end", (e: any) => (e.turnIndex === 0 ? { entries: [{ type: "context_edit", targetId: "nope", replacement: null }] } : undefined));
        sub.on("turn_end", (e: any) => {
          const user = sm.getBranch().find((x: any) => x.type === "message" && x.message.role === "user");
          if (e.turnIndex === 0) return { entries: [{ type: "context_edit", targetId: user.id, replacement: { content: "edited hello" } }, { type: "context_edit", targetId: e.messageEntryId, replacement: { content: "the call, edited" } }] };
          return { entries: [{ type: "compaction", summary: "boundary summary", firstKeptEntryId: e.messageEntryId, details: { by: "ext" } }] };
        });
        sub.on("turn_end", (e: any) => { seen.push(["turn_end", e.turnIndex, e.entries.map((d: any) => d.type), projected(e), e.context.contextMessages.map(text), e.context.llmMessages.length, e.context.canContinue]); });
      }, errors);
      sm = session.sessionManager;
      // The usage of the assistant message before an entry (pi's estimate starts from it; nothing follows it here).
      const lastUsage = (entry: any) => sm.getBranch(entry.parentId).filter((x: any) => x.message?.role === "assistant").at(-1).message.usage;
      const appended: any[] = [];
      session.subscribe((e: any) => { if (e.type === "entry_appended") appended.push(e.entry.type); });
      await session.prompt("hello");
      ctx.ui.notify(JSON.stringify({
        seen, errors, appended,
        entries: sm.getEntries().map((x: any) => x.type === "context_edit" ? ["context_edit", at(x.targetId), x.replacement]
          : x.type === "compaction" ? ["compaction", x.summary, at(x.firstKeptEntryId), x.fromHook, x.tokensBefore === lastUsage(x).totalTokens, x.details] : [x.type, x.message?.role ?? null]),
        messages: session.messages.map((m: any) => [m.role, text(m)]),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("retried", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const errors: string[] = [];
      const settingsManager = SettingsManager.inMemory({ retry: { maxRetries: 1, baseDelayMs: 1 } } as any);
      const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [(sub: ExtensionAPI) => {
        sub.on("agent_end", (e: any) => { seen.push(["ext agent_end", e.messages.length]); });
      }] });
      await resourceLoader.reload();
      const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, settingsManager, model: ctx.model, noTools: true } as any);
      await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
      const sm: any = session.sessionManager;
      const at = (id: string) => sm.getEntries().findIndex((x: any) => x.id === id);
      session.subscribe((e: any) => {
        if (e.type === "agent_end") seen.push([e.type, e.willRetry, session.retryAttempt]);
        if (e.type === "auto_retry_start") seen.push([e.type, e.attempt, e.maxAttempts, e.delayMs, e.errorMessage, session.isRetrying]);
        if (e.type === "auto_retry_end") seen.push([e.type, e.success, e.attempt, e.finalError ?? null]);
        if (e.type === "entry_appended") seen.push([e.type, e.entry.type, at(e.entry.targetId), e.entry.replacement]);
        if (e.type === "message_end") seen.push([e.type, e.message.role, e.message.stopReason ?? null]);
      });
      const before = [session.autoRetryEnabled, session.retryAttempt, session.isRetrying];
      await session.prompt("one");
      await session.prompt("two");
      ctx.ui.notify(JSON.stringify({
        seen, errors, before, after: [session.retryAttempt, session.isRetrying],
        entries: sm.getEntries().map((x: any) => [x.type, x.message?.role ?? (x.targetId ? at(x.targetId) : null), x.message?.stopReason ?? null]),
        messages: session.messages.map((m: any) => [m.role, text(m)]),
      }), "info");
      session.dispose();
    },
  });

  pi.registerCommand("system", {
    handler: async (_args, ctx) => {
      const seen: any[] = [];
      const errors: string[] = [];
      const session = await subSession(ctx, (sub) => {
        // Drops the oldest message each request: a changed conversation.
        sub.on("context", (e: any) => ({ messages: e.messages.slice(1) }));
        sub.on("context_with_system", (e: any) => {
          seen.push(e.messages.map((m: any) => m.role === "system"
            ? ["system", Object.keys(m.sections ?? {}).sort(), (m.toolsAdded ?? []).map((t: any) => t.name).sort(), (m.toolsRemoved ?? []).map((t: any) => t.name ?? t).sort()]
            : [m.role, text(m)]));
        });
      }, errors);
      await session.prompt("one");
      session.setActiveToolsByName(["read"]);
      await session.prompt("two");
      ctx.ui.notify(JSON.stringify({ seen, errors, roles: session.messages.map((m: any) => m.role) }), "info");
      session.dispose();
    },
  });
}
"#;

/// pi-rpc's note of `/<command>`, then pi 1.6.0's, the fake model answering a `shout` tool call, then "Shouted.".
async fn both(command: &str) -> Option<(Value, Value)> {
    let replies = [Reply::tool_call("call_1", "shout", r#"{"text":"hello"}"#), Reply::text("Shouted.")];
    both_with(command, &replies).await
}

async fn both_with(command: &str, replies: &[Reply]) -> Option<(Value, Value)> {
    let module = ("sdk-substream.ts", SDK_SUBSTREAM);
    side_by_side(|reference, command| async move { run_module(reference, module, &command, replies).await }, command)
        .await
}

#[tokio::test]
async fn sdk_session_extensions_see_its_provider_stream_events_as_in_pi() {
    let Some((ours, theirs)) = both("streamed").await else { return };
    // Each parsed event of both requests (a tool call, then text), with the model's provider, API and id.
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert!(seen.len() > 4, "{ours}");
    assert!(seen.iter().all(|s| s[0] == "provider_stream_event" && s[4].is_object()), "{ours}");
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn sdk_session_boundaries_write_context_edits_and_compactions_as_in_pi() {
    let Some((ours, theirs)) = both("edited").await else { return };
    // The bad draft reported; the edits written and sent; the compaction written from the extension.
    assert!(ours["errors"].as_array().is_some_and(|e| e.len() == 1), "{ours}");
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert!(seen.iter().any(|s| s[0] == "context" && s[1][0] == json!(["user", "edited hello"])), "{ours}");
    let entries = ours["entries"].as_array().cloned().unwrap_or_default();
    assert!(entries.iter().any(|e| e[0] == "compaction" && e[1] == "boundary summary" && e[3] == true), "{ours}");
    assert_eq!(ours["appended"], json!(["context_edit", "context_edit", "compaction"]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn a_context_handlers_conversation_follows_the_prompt_replayed_as_one_as_in_pi() {
    let Some((ours, theirs)) = both("system").await else { return };
    // Every request starts with one system message, whatever updates the transcript holds.
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert!(seen.len() >= 3, "{ours}");
    for request in &seen {
        let systems = request.as_array().map_or(0, |m| m.iter().filter(|x| x[0] == "system").count());
        assert_eq!(systems, 1, "{ours}");
    }
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_retries_failed_answers_as_pi_does() {
    let busy = || Reply::openai_error(503, "busy", "server_error");
    let Some((ours, theirs)) = both_with("retried", &[busy(), Reply::text("Recovered."), busy(), busy()]).await else {
        return;
    };
    // The first failure retried (its answer left out of the context) and recovered; the second given up after one retry.
    let seen = ours["seen"].as_array().cloned().unwrap_or_default();
    assert_eq!(seen.iter().filter(|s| s[0] == "auto_retry_start").count(), 2, "{ours}");
    assert!(seen.contains(&json!(["auto_retry_end", true, 1, null])), "{ours}");
    assert!(seen.iter().any(|s| s[0] == "auto_retry_end" && s[1] == false), "{ours}");
    assert!(seen.iter().any(|s| s[0] == "agent_end" && s[1] == true), "{ours}");
    assert!(seen.iter().any(|s| s[0] == "entry_appended" && s[1] == "context_edit"), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
