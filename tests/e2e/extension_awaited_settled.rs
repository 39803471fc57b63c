//! The notification handlers pi 1.6.0 awaits at a run's end and after a
//! session change, side by side with pi 1.6.0: `agent_settled` handlers run
//! to their end before the client's `agent_settled` (a UI call comes
//! before it; a prompt a handler sends starts its run after it),
//! `session_compact` handlers before `compaction_end` and the `compact`
//! answer, and `session_tree` handlers, another extension's too, before a
//! command's `navigateTree()` resolves. Compared: the client's transcript
//! (events, UI calls and responses in order) and the session file's entries.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_awaited_events::{entries, side_by_side, start, step};
use crate::extension_host::write_module;
use crate::harness::Pi;

/// Handlers that wait, then make a UI call (and append an entry, or send a prompt).
const WAITING_HANDLERS: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default function (pi: ExtensionAPI) {
  let settled = 0;
  pi.on("agent_settled", async (_event, ctx) => {
    const run = settled++;
    await pause(100);
    ctx.ui.notify(`agent_settled ${run}`, "info");
    pi.appendEntry("settled-note", { run });
    if (run === 0) pi.sendUserMessage("once more");
  });
  pi.on("session_compact", async (event, ctx) => {
    await pause(100);
    ctx.ui.notify(`session_compact ${event.reason}`, "info");
    pi.appendEntry("compact-note", {});
  });
  pi.on("session_tree", async (_event, ctx) => {
    await pause(100);
    ctx.ui.notify("session_tree", "info");
  });
}
"#;

/// Another extension's command that moves to the first user message.
const TREE_COMMAND: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerCommand("to-first", {
    description: "navigates to the first user message",
    handler: async (_args, ctx) => {
      const first = ctx.sessionManager
        .getEntries()
        .find((entry: any) => entry.type === "message" && entry.message.role === "user");
      if (first) await ctx.navigateTree(first.id, { summarize: false });
      ctx.ui.notify("navigated", "info");
    },
  });
}
"#;

/// Lines up to the first that `first` matches and the first that `second` matches, whichever comes last.
async fn until_both(pi: &mut Pi, first: impl Fn(&Value) -> bool, second: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut lines = pi.until(|line| first(line) || second(line)).await;
    let seen_first = lines.iter().any(&first);
    lines.extend(pi.until(|line| if seen_first { second(line) } else { first(line) }).await);
    lines
}

pub(crate) fn notified(line: &Value, message: &str) -> bool {
    line["type"] == "extension_ui_request" && line["message"] == message
}

/// What one program showed: two runs (the second the first's `agent_settled`
/// handler sent), a compaction, a command's tree navigation.
async fn observe(reference: bool) -> Value {
    let sb = crate::harness::Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({}));
    sb.server().push(Reply::text("first answer"));
    sb.server().push(Reply::text("second answer"));
    sb.server().set_fallback(Reply::text("## Goal\nSummarised."));
    write_module(&sb, "a-waiting.ts", WAITING_HANDLERS);
    write_module(&sb, "b-tree-command.ts", TREE_COMMAND);
    // The first run's turn is summarised, the second kept.
    let settings = json!({"compaction": {"keepRecentTokens": 1}});
    let Some(mut pi) = start(&sb, reference, settings) else { return Value::Null };
    pi.call("c", json!({"type": "get_commands"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "hello"})).await;
    let mut lines = until_both(&mut pi, |l| l["type"] == "agent_settled", |l| notified(l, "agent_settled 0")).await;
    lines.extend(until_both(&mut pi, |l| l["type"] == "agent_settled", |l| notified(l, "agent_settled 1")).await);
    let runs: Vec<String> = lines.iter().filter_map(step).collect();
    pi.send(json!({"id": "k", "type": "compact"})).await;
    let lines = until_both(&mut pi, |l| l["id"] == "k", |l| notified(l, "session_compact manual")).await;
    let compaction: Vec<String> = lines.iter().filter_map(step).collect();
    pi.send(json!({"id": "t", "type": "prompt", "message": "/to-first"})).await;
    let lines = until_both(&mut pi, |l| notified(l, "navigated"), |l| notified(l, "session_tree")).await;
    let tree: Vec<String> = lines.iter().filter_map(step).collect();
    pi.call("s", json!({"type": "get_state"})).await;
    let session = entries(&sb);
    pi.close_stdin();
    json!({"runs": runs, "compaction": compaction, "tree": tree, "session": session})
}

#[tokio::test]
async fn settled_compact_and_tree_handlers_are_awaited_as_pi_awaits_them() {
    let Some(theirs) = side_by_side(observe).await else { return };
    // What pi does, spelled out: each handler's UI call before what follows it.
    let list = |key: &str| -> Vec<String> {
        theirs[key].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
    };
    let runs = list("runs");
    let at = |what: &str| runs.iter().position(|s| s == what);
    assert!(at("notify agent_settled 0") < at("agent_settled"), "{runs:?}");
    let compaction = list("compaction");
    let at = |what: &str| compaction.iter().position(|s| s == what);
    assert!(at("notify session_compact manual") < at("compaction_end"), "{compaction:?}");
    let tree = list("tree");
    let at = |what: &str| tree.iter().position(|s| s == what);
    assert!(at("notify session_tree") < at("notify navigated"), "{tree:?}");
}

/// An `agent_settled` handler that, after the first run, says it waits,
/// waits, then sends a custom message that triggers a turn (`deliverAs`
/// steering, which the run that is over cannot take), a follow-up user
/// message, and a custom message that triggers nothing.
const DEFERRING_HANDLER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default function (pi: ExtensionAPI) {
  let settled = 0;
  pi.on("agent_settled", async (_event, ctx) => {
    const run = settled++;
    ctx.ui.notify(`settling ${run}`, "info");
    if (run !== 0) return;
    await pause(400);
    pi.sendMessage(
      { customType: "settled-note", content: "noted after the run", display: true },
      { triggerTurn: true, deliverAs: "steer" },
    );
    pi.sendUserMessage("and a follow-up", { deliverAs: "followUp" });
    pi.sendMessage({ customType: "settled-aside", content: "an aside", display: true });
    ctx.ui.notify(`settled ${run} done`, "info");
  });
}
"#;

/// What the model was asked: each request's messages, role and text.
pub(crate) fn asked(sb: &crate::harness::Sandbox) -> Vec<Vec<String>> {
    let text = |message: &Value| match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(" "),
        _ => String::new(),
    };
    let request = |body: &Value| -> Vec<String> {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let said =
            |m: &Value| (m["role"] != "system").then(|| format!("{} {}", m["role"].as_str().unwrap_or(""), text(m)));
        messages.iter().filter_map(said).collect()
    };
    sb.server().requests().iter().map(|r| request(&r.body)).collect()
}

/// What one program showed when a client's `prompt` arrives while the first
/// run's `agent_settled` handler waits, and that handler then sends a custom
/// message with `triggerTurn`: the transcript, the session's entries, what the
/// model was asked.
async fn observe_deferrals(reference: bool) -> Value {
    let sb = crate::harness::Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({}));
    sb.server().push(Reply::text("first answer"));
    sb.server().push(Reply::text("second answer"));
    sb.server().push(Reply::text("third answer"));
    sb.server().push(Reply::text("fourth answer"));
    sb.server().set_fallback(Reply::text("more"));
    write_module(&sb, "deferring.ts", DEFERRING_HANDLER);
    let Some(mut pi) = start(&sb, reference, json!({})) else { return Value::Null };
    pi.call("c", json!({"type": "get_commands"})).await;
    pi.send(json!({"id": "p1", "type": "prompt", "message": "hello"})).await;
    let mut lines = pi.until(|l| notified(l, "settling 0")).await;
    // The run is over for pi while the handler waits.
    pi.send(json!({"id": "s0", "type": "get_state"})).await;
    lines.extend(pi.until(|l| l["id"] == "s0").await);
    let streaming = lines.last().map(|state| state["data"]["isStreaming"].clone()).unwrap_or_default();
    pi.send(json!({"id": "p2", "type": "prompt", "message": "while settling"})).await;
    let settled = |count: usize| {
        let mut seen = 0;
        move |line: &Value| {
            seen += usize::from(line["type"] == "agent_settled");
            seen == count
        }
    };
    // The first run's end, then the runs of the client's prompt, the custom message, the user message.
    lines.extend(pi.until(settled(4)).await);
    pi.call("s", json!({"type": "get_state"})).await;
    let transcript: Vec<String> = lines.iter().filter_map(step).collect();
    let session = entries(&sb);
    pi.close_stdin();
    json!({"transcript": transcript, "streaming": streaming, "session": session, "asked": asked(&sb)})
}

#[tokio::test]
async fn a_prompt_and_a_triggered_message_during_agent_settled_handlers_wait_for_it_as_in_pi() {
    let Some(theirs) = side_by_side(observe_deferrals).await else { return };
    assert_eq!(theirs["streaming"], json!(false));
    // What pi does, spelled out: the prompt is answered once `agent_settled`
    // is out, its run first, then the custom message's, then the user message's.
    let transcript: Vec<&str> =
        theirs["transcript"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let at = |what: &str, from: usize| transcript.iter().skip(from).position(|s| *s == what).map(|i| i + from);
    let first_settled = at("agent_settled", 0).unwrap_or(usize::MAX);
    assert_eq!(at("response prompt", 1).map(|i| i == first_settled + 1), Some(true), "{transcript:?}");
    let asked = theirs["asked"].as_array().cloned().unwrap_or_default();
    let last = |request: &Value| request.as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
    let lasts: Vec<Value> = asked.iter().map(last).collect();
    assert_eq!(
        lasts,
        vec![
            json!("user hello"),
            json!("user while settling"),
            json!("user noted after the run"),
            json!("user and a follow-up")
        ],
        "{asked:?}"
    );
}
