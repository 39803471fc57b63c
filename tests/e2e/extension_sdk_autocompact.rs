//! An SDK session's automatic compaction, side by side with pi 1.6.0: over
//! the threshold after a run (`session_before_compact` and `session_compact`
//! with reason `threshold`, `compaction_start`/`compaction_end`, the summary
//! entry), and a context overflow recovered (the failed answer left out with
//! a `context_edit`, reason `overflow` with `willRetry`, the prompt answered
//! again). Each is an extension command that notifies a JSON summary
//! (helpers of extension_sdk_runner.rs); pi-rpc's is compared with pi
//! 1.6.0's whole: the events the session's subscribers and its extension
//! saw, and its entries (`tokensBefore` only as present: each program's
//! request carries its own system prompt, see compat/DEVIATIONS.md).
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_sdk_runner::run_module;
use crate::extension_sdk_services::side_by_side;

const SDK_AUTOCOMPACT: &str = r#"import {
  createAgentSession, DefaultResourceLoader, getAgentDir, SessionManager, SettingsManager,
} from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** A message's text, briefly. */
const text = (m: any) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((b: any) => b.text ?? b.type).join("|")).slice(0, 40);

/** Prompts `prompts` in an SDK session with these compaction settings; what it and its extension saw, and its entries. */
async function compacting(ctx: any, compaction: any, prompts: string[]) {
  const seen: any[] = [];
  const errors: string[] = [];
  const settingsManager = SettingsManager.inMemory({ compaction, retry: { enabled: false } } as any);
  const resourceLoader = new DefaultResourceLoader({ cwd: ctx.cwd, agentDir: getAgentDir(), noExtensions: true, extensionFactories: [(sub: ExtensionAPI) => {
    sub.on("session_before_compact", (e: any) => { seen.push(["ext " + e.type, e.reason, e.willRetry, e.customInstructions ?? null]); });
    sub.on("session_compact", (e: any) => { seen.push(["ext " + e.type, e.reason, e.willRetry, e.fromExtension, e.compactionEntry.summary]); });
    sub.on("session_compact_failed", (e: any) => { seen.push(["ext " + e.type, e.reason, e.willRetry, e.errorMessage ?? null]); });
  }] });
  await resourceLoader.reload();
  const { session } = await createAgentSession({ cwd: ctx.cwd, sessionManager: SessionManager.inMemory(ctx.cwd), resourceLoader, settingsManager, model: ctx.model, noTools: true } as any);
  await session.bindExtensions({ onError: (e: any) => errors.push(`${e.event}: ${e.error}`) });
  const sm: any = session.sessionManager;
  const at = (id: string | undefined) => (id === undefined ? null : sm.getEntries().findIndex((x: any) => x.id === id));
  session.subscribe((e: any) => {
    if (e.type === "agent_start") seen.push([e.type]);
    if (e.type === "agent_end") seen.push([e.type, e.willRetry]);
    if (e.type === "compaction_start") seen.push([e.type, e.reason, session.isCompacting]);
    if (e.type === "compaction_end") {
      const r = e.result;
      seen.push([e.type, e.reason, e.aborted, e.willRetry, e.errorMessage ?? null, r ? [r.summary, at(r.firstKeptEntryId), r.tokensBefore > 0] : null]);
    }
    if (e.type === "entry_appended") seen.push([e.type, e.entry.type, at(e.entry.targetId), e.entry.replacement]);
    if (e.type === "message_end") seen.push([e.type, e.message.role, e.message.stopReason ?? null]);
  });
  const enabled = session.autoCompactionEnabled;
  for (const prompt of prompts) await session.prompt(prompt);
  ctx.ui.notify(JSON.stringify({
    seen, errors, enabled,
    entries: sm.getEntries().map((x: any) => x.type === "compaction" ? [x.type, x.summary, at(x.firstKeptEntryId), x.tokensBefore > 0, x.fromHook ?? null]
      : x.type === "context_edit" ? [x.type, at(x.targetId), x.replacement] : [x.type, x.message?.role ?? null, x.message ? text(x.message) : null]),
    messages: session.messages.map((m: any) => [m.role, text(m)]),
  }), "info");
  session.dispose();
}

const long = (word: string) => Array(60).fill(word).join(" ");

export default function (pi: ExtensionAPI) {
  pi.registerCommand("threshold", {
    // 1000 tokens left below the window: the second answer's usage (1100) is over it.
    handler: async (_args, ctx) => compacting(ctx, { reserveTokens: ctx.model.contextWindow - 1000, keepRecentTokens: 150 }, [long("one"), long("two"), "three"]),
  });
  pi.registerCommand("overflow", {
    handler: async (_args, ctx) => compacting(ctx, { keepRecentTokens: 150 }, [long("one"), long("uno"), `retry me ${long("two")}`]),
  });
}
"#;

async fn both(command: &str, replies: &[Reply]) -> Option<(Value, Value)> {
    let module = ("sdk-autocompact.ts", SDK_AUTOCOMPACT);
    side_by_side(|reference, command| async move { run_module(reference, module, &command, replies).await }, command)
        .await
}

/// The events of `note` of one type (the first element of each).
fn of_type(note: &Value, kind: &str) -> Vec<Value> {
    note["seen"].as_array().map_or(Vec::new(), |s| s.iter().filter(|e| e[0] == kind).cloned().collect())
}

#[tokio::test]
async fn an_sdk_session_compacts_over_the_threshold_as_pi_does() {
    let replies = [
        Reply::text(&"alpha ".repeat(60)).usage(500, 100, 0),
        Reply::text(&"beta ".repeat(60)).usage(900, 200, 0),
        Reply::text("THRESHOLD SUMMARY").usage(50, 5, 0),
        Reply::text("third answer").usage(300, 10, 0),
    ];
    let Some((ours, theirs)) = both("threshold", &replies).await else { return };
    // One compaction, after the second run, before the third prompt: the summary kept, the extension told.
    assert_eq!(ours["enabled"], true, "{ours}");
    let ends = of_type(&ours, "compaction_end");
    assert_eq!(ends.len(), 1, "{ours}");
    assert_eq!(ends[0][1], "threshold", "{ours}");
    // Keeping 150 tokens cuts inside the second turn: its prefix summarised.
    assert!(ends[0][5][0].as_str().is_some_and(|s| s.ends_with("THRESHOLD SUMMARY")), "{ours}");
    assert_eq!(of_type(&ours, "ext session_compact").len(), 1, "{ours}");
    assert_eq!(ours["errors"], json!([]), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}

#[tokio::test]
async fn an_sdk_session_recovers_from_a_context_overflow_as_pi_does() {
    let overflow = Reply::error(
        400,
        json!({"error": {"message": "This model's maximum context length is 4000 tokens. However, your messages resulted in 5000 tokens.",
                          "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        .to_string(),
    );
    let replies = [
        Reply::text(&"alpha ".repeat(60)).usage(500, 100, 0),
        Reply::text(&"beta ".repeat(60)).usage(700, 100, 0),
        overflow,
        Reply::text("OVERFLOW SUMMARY").usage(50, 5, 0),
        Reply::text("answer after recovery").usage(300, 10, 0),
    ];
    let Some((ours, theirs)) = both("overflow", &replies).await else { return };
    // The failed answer left out, compacted with a retry, the prompt answered again.
    let ends = of_type(&ours, "compaction_end");
    assert_eq!(ends.len(), 1, "{ours}");
    assert_eq!((&ends[0][1], &ends[0][3]), (&json!("overflow"), &json!(true)), "{ours}");
    assert!(of_type(&ours, "entry_appended").iter().any(|e| e[1] == "context_edit"), "{ours}");
    let messages = ours["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.last(), Some(&json!(["assistant", "answer after recovery"])), "{ours}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
