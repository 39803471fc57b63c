//! `agent_end` handlers, side by side with pi 1.6.0: pi awaits them before
//! the event goes out and before the run goes on or settles, so what a
//! handler does shows before the client's `agent_end`, and the messages it
//! queues (`sendMessage` with `deliverAs: "followUp"`, as pi's plan-mode
//! example does once its plan is accepted) are still the run's: a fresh
//! low-level run takes them from the queue (one per turn, the queue's
//! `one-at-a-time` mode), each custom message in its own model request, and
//! no `queue_update` is sent for a custom message. Compared: the events'
//! sequence (system messages left out), the model requests and the
//! conversation. A handler that also changes the active tools (pi's
//! plan-mode example) has the fresh run's first request declare the new
//! tools while the prompt's sections (its tool list) change only at the
//! request after it, as pi's `agent.continue()` prepares them from its
//! second turn on.
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_project_trust::spawn_either;
use crate::extension_provider_events::reference_cli;
use crate::harness::Sandbox;

/// At the first `agent_end`, after a wait (awaited, in pi), a note and two
/// follow-ups: a card, then a message that triggers a turn.
const FOLLOW_UPS_AT_AGENT_END: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  let ends = 0;
  pi.on("agent_end", async (event, ctx) => {
    ends += 1;
    if (ends > 1) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
    ctx.ui.notify(`agent_end with ${event.messages.length} messages, idle: ${ctx.isIdle()}`, "info");
    pi.sendMessage({ customType: "card", content: "the plan's card", display: true }, { deliverAs: "followUp" });
    pi.sendMessage({ customType: "go", content: "execute the plan", display: true }, { triggerTurn: true, deliverAs: "followUp" });
  });
}
"#;

/// [`FOLLOW_UPS_AT_AGENT_END`], with the active tools set to `read` first.
const TOOLS_AND_FOLLOW_UPS_AT_AGENT_END: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  let ends = 0;
  pi.on("agent_end", async () => {
    ends += 1;
    if (ends > 1) return;
    pi.setActiveTools(["read"]);
    pi.sendMessage({ customType: "card", content: "the plan's card", display: true }, { deliverAs: "followUp" });
    pi.sendMessage({ customType: "go", content: "execute the plan", display: true }, { triggerTurn: true, deliverAs: "followUp" });
  });
}
"#;

/// One line of the events' sequence: its type, and what tells it apart.
fn step(line: &Value) -> Option<String> {
    let kind = line["type"].as_str()?;
    let message = &line["message"];
    match kind {
        "message_start" | "message_end" if message["role"] == "system" => None,
        "message_start" | "message_end" => {
            let what = message["customType"].as_str().or(message["role"].as_str()).unwrap_or_default();
            Some(format!("{kind} {what}"))
        }
        "extension_ui_request" => Some(format!("notify {}", line["message"].as_str().unwrap_or_default())),
        "queue_update" | "agent_start" | "agent_end" | "turn_start" | "turn_end" | "agent_settled" => {
            Some(kind.to_string())
        }
        "response" => Some(format!("response {}", line["command"].as_str().unwrap_or_default())),
        _ => None,
    }
}

/// What one program did: the sequence, the requests' last messages, the conversation's roles.
async fn observe(reference: bool) -> Value {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return Value::Null };
    let sb = Sandbox::with_server().await;
    sb.server().set_fallback(Reply::text("ok"));
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "follow-ups.ts", FOLLOW_UPS_AT_AGENT_END);
    let mut pi = spawn_either(&sb, &node, reference, &[]);
    pi.call("c", json!({"type": "get_commands"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "make a plan"})).await;
    let lines = pi.until_type("agent_settled").await;
    let sequence: Vec<String> = lines.iter().filter_map(step).collect();
    let requests: Vec<Value> = sb
        .server()
        .requests()
        .iter()
        .map(|r| {
            let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
            let last = messages.last().cloned().unwrap_or_default();
            json!({"messages": messages.len(), "last": last["content"]})
        })
        .collect();
    let conversation = pi.call("m", json!({"type": "get_messages"})).await;
    let roles: Vec<String> = conversation["data"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] != "system")
        .map(|m| m["customType"].as_str().or(m["role"].as_str()).unwrap_or_default().to_string())
        .collect();
    pi.close_stdin();
    json!({"sequence": sequence, "requests": requests, "conversation": roles})
}

#[tokio::test]
async fn messages_an_agent_end_handler_queues_run_in_a_fresh_run_as_in_pi() {
    if node22().is_none() || host_dir().is_none() || reference_cli().is_none() {
        return;
    }
    let (ours, theirs) = tokio::join!(observe(false), observe(true));
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
    // What pi does, spelled out: three requests, the card and the message each in a turn of its own.
    let lasts: Vec<&Value> = theirs["requests"].as_array().into_iter().flatten().map(|r| &r["last"]).collect();
    assert_eq!(lasts.len(), 3, "{theirs:#}");
    assert_eq!(theirs["conversation"], json!(["user", "assistant", "card", "assistant", "go", "assistant"]));
}

/// Each model request's tools, and whether its system prompt is the one
/// of the request before (the texts are each program's own), with
/// [`TOOLS_AND_FOLLOW_UPS_AT_AGENT_END`].
async fn prompts_after_a_tool_change(reference: bool) -> Value {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return Value::Null };
    let sb = Sandbox::with_server().await;
    sb.server().set_fallback(Reply::text("ok"));
    host_settings(&sb, &node, &dir, json!({}));
    write_module(&sb, "plan.ts", TOOLS_AND_FOLLOW_UPS_AT_AGENT_END);
    let mut pi = spawn_either(&sb, &node, reference, &[]);
    pi.call("c", json!({"type": "get_commands"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "make a plan"})).await;
    pi.until_type("agent_settled").await;
    pi.close_stdin();
    let requests = sb.server().requests();
    let tools: Vec<Vec<String>> = requests.iter().map(|r| crate::mcp::tool_names(&r.body)).collect();
    let prompts: Vec<&str> =
        requests.iter().map(|r| r.body["messages"][0]["content"].as_str().unwrap_or_default()).collect();
    let kept: Vec<bool> = prompts.windows(2).map(|pair| pair[0] == pair[1]).collect();
    let lists_bash: Vec<bool> = prompts.iter().map(|p| p.contains("\n- bash:")).collect();
    json!({"tools": tools, "prompt as before": kept, "prompt lists bash": lists_bash})
}

#[tokio::test]
async fn a_fresh_runs_first_request_keeps_the_prompts_sections_after_a_tool_change_as_in_pi() {
    if node22().is_none() || host_dir().is_none() || reference_cli().is_none() {
        return;
    }
    let (ours, theirs) = tokio::join!(prompts_after_a_tool_change(false), prompts_after_a_tool_change(true));
    let all = ["read", "bash", "edit", "write"];
    // The fresh run declares the new tools at once; its first request's
    // prompt still lists the old ones, the request after it the new ones.
    assert_eq!(ours["tools"], json!([all, ["read"], ["read"]]), "{ours:#}");
    assert_eq!(ours["prompt as before"], json!([true, false]), "{ours:#}");
    assert_eq!(ours["prompt lists bash"], json!([true, true, false]), "{ours:#}");
    assert_eq!(ours, theirs, "pi-rpc, then pi 1.6.0");
}
