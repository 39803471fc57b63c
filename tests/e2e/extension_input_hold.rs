//! Prompts an `input` hook holds, side by side with pi 1.6.0: of the work
//! deferred past a run's `agent_settled` (a client's prompts, an
//! extension's `sendUserMessage`), each is decided by the hooks, and its run
//! over, before the next starts, whether the hook answers `continue`,
//! `handled` or `transform`. Compared: the client's transcript (events, UI
//! calls, responses and their dispositions in order), the session file's
//! entries, what the model was asked.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::time::Duration;

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_awaited_events::{entries, start, step};
use crate::extension_awaited_settled::{asked, notified};
use crate::extension_host::{host_dir, write_module};
use crate::extension_provider_events::reference_cli;
use crate::harness::Pi;

/// An `agent_settled` handler that waits after the first run, then sends a
/// user message; an `input` hook that says what it was asked, waits, then
/// handles `handle…`, transforms `transform…` and lets the rest through.
const HOLDING_HOOK: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default function (pi: ExtensionAPI) {
  let settled = 0;
  pi.on("agent_settled", async (_event, ctx) => {
    const run = settled++;
    ctx.ui.notify(`settling ${run}`, "info");
    if (run !== 0) return;
    await pause(200);
    pi.sendUserMessage("from the extension");
    ctx.ui.notify(`settled ${run} done`, "info");
  });
  pi.on("input", async (event, ctx) => {
    ctx.ui.notify(`input ${event.text} (${event.source}, ${event.streamingBehavior ?? "-"})`, "info");
    await pause(150);
    if (event.text.startsWith("handle")) {
      ctx.ui.notify(`handled ${event.text}`, "info");
      return { action: "handled" };
    }
    if (event.text.startsWith("transform")) {
      ctx.ui.notify(`transformed ${event.text}`, "info");
      return { action: "transform", text: `transformed: ${event.text}` };
    }
    ctx.ui.notify(`continue ${event.text}`, "info");
    return { action: "continue" };
  });
}
"#;

/// One line of the transcript; a response with its id and disposition or error.
fn shown(line: &Value) -> Option<String> {
    match line["type"].as_str()? {
        "response" => {
            let outcome = line["data"]["disposition"].as_str().or(line["error"].as_str()).unwrap_or_default();
            Some(format!("response {} {}", line["id"].as_str()?, outcome).trim().to_string())
        }
        "extension_error" => Some(format!("extension_error {}", line["error"].as_str()?)),
        _ => step(line),
    }
}

/// Lines until `done` matches one, or until none came for `quiet`.
async fn until_or_quiet(pi: &mut Pi, quiet: Duration, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
    let mut lines = Vec::new();
    while let Ok(line) = tokio::time::timeout(quiet, pi.next()).await {
        let last = done(&line);
        lines.push(line);
        if last {
            break;
        }
    }
    lines
}

/// What one program showed when three prompts arrive while the first run's
/// `agent_settled` handler waits, and that handler then sends a user message.
async fn observe_deferred(reference: bool) -> Value {
    let sb = crate::harness::Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({}));
    sb.server().set_fallback(Reply::text("an answer"));
    write_module(&sb, "holding.ts", HOLDING_HOOK);
    let Some(mut pi) = start(&sb, reference, json!({})) else { return Value::Null };
    pi.call("c", json!({"type": "get_commands"})).await;
    pi.send(json!({"id": "p1", "type": "prompt", "message": "hello"})).await;
    let mut lines = pi.until(|l| notified(l, "settling 0")).await;
    pi.send(json!({"id": "p2", "type": "prompt", "message": "second"})).await;
    pi.send(json!({"id": "p3", "type": "prompt", "message": "handle third"})).await;
    pi.send(json!({"id": "p4", "type": "prompt", "message": "transform fourth"})).await;
    // The first run's end; pi: the runs of "second", "transformed: transform fourth", "from the extension".
    let mut settled = 0;
    let four_runs = |l: &Value| {
        settled += usize::from(l["type"] == "agent_settled");
        settled == 4
    };
    lines.extend(until_or_quiet(&mut pi, Duration::from_secs(3), four_runs).await);
    pi.call("s", json!({"type": "get_state"})).await;
    let transcript: Vec<String> = lines.iter().filter_map(shown).collect();
    let session = entries(&sb);
    pi.close_stdin();
    json!({"transcript": transcript, "session": session, "asked": asked(&sb)})
}

#[tokio::test]
async fn work_deferred_past_agent_settled_waits_for_the_input_hooks_decision_as_in_pi() {
    if node22().is_none() || host_dir().is_none() || reference_cli().is_none() {
        return;
    }
    let (ours, theirs) = tokio::join!(observe_deferred(false), observe_deferred(true));
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    // What pi does, spelled out: each deferred item asked about once the one before is decided and its run over.
    let transcript: Vec<&str> =
        theirs["transcript"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let at = |what: &str| transcript.iter().position(|s| *s == what).unwrap_or(usize::MAX);
    assert!(at("notify settling 1") < at("notify input handle third (rpc, -)"), "{transcript:?}");
    assert!(at("response p3 handled") < at("notify input transform fourth (rpc, -)"), "{transcript:?}");
    assert!(at("notify settling 2") < at("notify input from the extension (extension, -)"), "{transcript:?}");
    let lasts: Vec<Value> = theirs["asked"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|request| request.as_array().and_then(|m| m.last()).cloned().unwrap_or_default())
        .collect();
    let expected = ["user hello", "user second", "user transformed: transform fourth", "user from the extension"];
    assert_eq!(lasts, expected.map(Value::from).to_vec(), "{:?}", theirs["asked"]);
}
