//! Extensions' notification handlers, awaited where pi 1.6.0 awaits them,
//! side by side with pi 1.6.0: pi runs each handler of `agent_start`,
//! `turn_start`, `message_start`, `message_update` and the tool execution
//! events to its end before it writes the event to the client and goes on,
//! so a UI call such a handler makes comes before the event, and an entry a
//! `turn_start` handler appends comes before the prompt's user message in
//! the session file. `set_model` is answered once the `model_select`
//! handlers are done; `set_thinking_level` once the `thinking_level_select`
//! handlers started (pi does not await them: what a handler does after its
//! first wait comes after the answer). Compared: the client's transcript
//! (events, UI calls and responses in order) and the session file's entries.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::harness::{Pi, Sandbox, read_jsonl};

/// Handlers that wait, make UI calls and append an entry.
const WAITING_HANDLERS: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default function (pi: ExtensionAPI) {
  pi.on("turn_start", async (event, ctx) => {
    ctx.ui.notify(`turn_start ${event.turnIndex}`, "info");
    await pause(100);
    pi.appendEntry("turn-note", { turn: event.turnIndex });
    ctx.ui.setStatus("turn", `turn ${event.turnIndex} noted`);
  });
  pi.on("message_start", async (event, ctx) => {
    await pause(30);
    ctx.ui.notify(`message_start ${event.message.role}`, "info");
  });
  pi.on("tool_execution_start", async (event, ctx) => {
    await pause(50);
    ctx.ui.notify(`tool_execution_start ${event.toolName}`, "info");
  });
  pi.on("tool_execution_end", async (event, ctx) => {
    await pause(50);
    ctx.ui.notify(`tool_execution_end ${event.toolName} ${event.isError}`, "info");
  });
  pi.on("model_select", async (event, ctx) => {
    await pause(300);
    ctx.ui.notify(`model_select ${event.model.id} (${ctx.model?.id})`, "info");
  });
  pi.on("thinking_level_select", async (event, ctx) => {
    ctx.ui.notify(`thinking_level_select ${event.level}`, "info");
    await pause(50);
    ctx.ui.notify(`thinking_level_select ${event.level} later`, "info");
  });
}
"#;

/// `observe`'s answer for pi-rpc and for pi 1.6.0, run at once and asserted
/// equal: pi's, or `None` without node 22, the host's packages or the reference.
pub(crate) async fn side_by_side<F: std::future::Future<Output = Value>>(observe: impl Fn(bool) -> F) -> Option<Value> {
    if node22().is_none() || host_dir().is_none() || reference_cli().is_none() {
        return None;
    }
    let (ours, theirs) = tokio::join!(observe(false), observe(true));
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    Some(theirs)
}

/// pi-rpc or pi 1.6.0 in `sb` with `settings`, its session saved.
pub(crate) fn start(sb: &Sandbox, reference: bool, settings: Value) -> Option<Pi> {
    let (Some(node), Some(dir), Some(cli)) = (node22(), host_dir(), reference_cli()) else { return None };
    host_settings(sb, &node, &dir, settings);
    Some(if reference {
        let mut cmd = reference_command(sb, &node, &cli);
        cmd.arg("--offline").env("PI_OFFLINE", "1");
        Pi::start_unchecked(cmd)
    } else {
        sb.spawn(&[])
    })
}

/// One line of the client's transcript: what it is, and what tells it apart.
pub(crate) fn step(line: &Value) -> Option<String> {
    let kind = line["type"].as_str()?;
    match kind {
        "message_start" | "message_end" if line["message"]["role"] == "system" => None,
        "message_start" | "message_end" => Some(format!("{kind} {}", line["message"]["role"].as_str()?)),
        "tool_execution_start" | "tool_execution_end" => Some(format!("{kind} {}", line["toolName"].as_str()?)),
        "extension_ui_request" => match line["method"].as_str()? {
            "notify" => Some(format!("notify {}", line["message"].as_str()?)),
            "setStatus" => Some(format!("status {}", line["statusText"].as_str()?)),
            _ => None,
        },
        "agent_start" | "agent_end" | "turn_start" | "turn_end" | "agent_settled" | "compaction_start"
        | "compaction_end" => Some(kind.to_string()),
        "response" => Some(format!("response {}", line["command"].as_str()?)),
        _ => None,
    }
}

/// The session file's entries: their kind, and the message's role or the entry's custom type.
pub(crate) fn entries(sb: &Sandbox) -> Vec<String> {
    let files = sb.session_files();
    let Some(file) = files.first() else { return Vec::new() };
    read_jsonl(file)
        .iter()
        .filter_map(|entry| {
            let kind = entry["type"].as_str()?;
            let what = entry["message"]["role"].as_str().or(entry["customType"].as_str()).unwrap_or_default();
            Some(format!("{kind} {what}").trim().to_string())
        })
        .collect()
}

/// What one program showed: a prompt's run with a tool call (transcript,
/// entries), then `set_model` and `set_thinking_level` (transcript).
async fn observe(reference: bool) -> Value {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    std::fs::write(sb.cwd.path().join("notes.txt"), "alpha\n").expect("notes");
    sb.server().push(Reply::tool_call("call_1", "read", r#"{"path":"notes.txt"}"#));
    sb.server().set_fallback(Reply::text("done"));
    write_module(&sb, "waiting.ts", WAITING_HANDLERS);
    let Some(mut pi) = start(&sb, reference, json!({})) else { return Value::Null };
    pi.call("c", json!({"type": "get_commands"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "read the notes"})).await;
    let run: Vec<String> = pi.until_type("agent_settled").await.iter().filter_map(step).collect();
    let session = entries(&sb);
    pi.send(json!({"id": "t", "type": "set_thinking_level", "level": "high"})).await;
    let mut settings = pi.until(|line| line["message"] == "thinking_level_select high later").await;
    // The other model does not reason: the level goes to `off` too.
    pi.send(json!({"id": "m", "type": "set_model", "provider": "fake", "modelId": "fake-other"})).await;
    settings.extend(pi.until(|line| line["id"] == "m").await);
    let mut settings: Vec<String> = settings.iter().filter_map(step).collect();
    let last = pi.call("s", json!({"type": "get_state"})).await;
    settings.push(format!("state {} {}", last["data"]["model"]["id"], last["data"]["thinkingLevel"]));
    pi.close_stdin();
    json!({"run": run, "session": session, "settings": settings})
}

#[tokio::test]
async fn notification_handlers_are_awaited_where_pi_awaits_them() {
    if node22().is_none() || host_dir().is_none() || reference_cli().is_none() {
        return;
    }
    let (ours, theirs) = tokio::join!(observe(false), observe(true));
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    // What pi does, spelled out: the turn's UI calls before its event, its entry before the user message.
    let run: Vec<&str> = theirs["run"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let at = |what: &str| run.iter().position(|s| *s == what);
    assert!(at("status turn 0 noted") < at("turn_start"), "{run:?}");
    let session: Vec<&str> = theirs["session"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let at = |what: &str| session.iter().position(|s| *s == what);
    assert!(at("custom turn-note") < at("message user"), "{session:?}");
    // `set_model` answered after its `model_select` handler, `set_thinking_level` before the end of its handler.
    let settings: Vec<&str> = theirs["settings"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let at = |what: &str| settings.iter().position(|s| *s == what);
    assert!(at("notify model_select fake-other (fake-other)") < at("response set_model"), "{settings:?}");
    assert!(at("response set_thinking_level") < at("notify thinking_level_select high later"), "{settings:?}");
}
