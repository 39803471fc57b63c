//! pi's streaming assistant message in the events extensions get while the
//! agent streams a reply, side by side with pi 1.6.0: on each of two wire
//! APIs one paced reply (thinking, text, a tool call, usage) is streamed to
//! the agent, and an extension records every `message_start`,
//! `message_update` and `message_end` as its handler saw it: `message` (the
//! streaming message as it stood, `stopReason: "pending"` until the
//! provider says one) and `assistantMessageEvent.partial` (the same
//! message), tool calls typed as pi-ai types them.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::extension_sdk_session::PACE_MS;
use crate::harness::Sandbox;

/// The wire APIs compared.
const APIS: [&str; 2] = ["openai-completions", "anthropic-messages"];

/// Records the message events, whole, one JSON line each, to LOG_PATH.
const RECORDER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { appendFileSync } from "node:fs";

export default function (pi: ExtensionAPI) {
  for (const name of ["message_start", "message_update", "message_end"]) {
    (pi.on as any)(name, (event: any) => {
      appendFileSync(LOG_PATH, `${JSON.stringify(event)}\n`);
    });
  }
}
"#;

/// The records of the assistant's messages in pi-rpc's or pi's run of one
/// reply from `api` and the answer after its tool call, with clock
/// readings made the same.
async fn recorded(reference: bool, api: &str) -> Option<Vec<Value>> {
    let (Some(node), Some(dir), Some(cli)) = (node22(), host_dir(), reference_cli()) else { return None };
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"api": api, "reasoning": true}));
    host_settings(&sb, &node, &dir, json!({}));
    let log = sb.cwd.path().join("messages.log");
    let quoted = Value::from(log.display().to_string()).to_string();
    write_module(&sb, "recorder.ts", &RECORDER.replace("LOG_PATH", &quoted));
    std::fs::write(sb.cwd.path().join("notes.txt"), "alpha\n").expect("notes");
    let reply = Reply::text("Reading it.")
        .with_thinking("Look first.")
        .with_tool_call(FakeToolCall::new("c1", "read", r#"{"path": "notes.txt"}"#))
        .usage(40, 9, 8);
    sb.server().push(reply.paced_ms(PACE_MS));
    sb.server().push(Reply::text("It says alpha.").usage(60, 5, 0).paced_ms(PACE_MS));
    let mut pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
    let answer = pi.call("p", json!({"type": "prompt", "message": "read the notes"})).await;
    assert_eq!(answer["success"], true, "{answer}");
    pi.until_type("agent_settled").await;
    pi.close_stdin();
    pi.wait().await;
    let text = std::fs::read_to_string(&log).expect("the recorder's log");
    let records = text.lines().map(|line| without_clock(serde_json::from_str(line).expect("a JSON record")));
    // The assistant's (the system message's sections are pi-rpc's own words).
    Some(records.filter(|r| r["message"]["role"] == "assistant").collect())
}

/// `value` with its timestamps and durations as `<time>`.
fn without_clock(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                *v = if ["timestamp", "durationMs"].contains(&key.as_str()) {
                    json!("<time>")
                } else {
                    without_clock(std::mem::take(v))
                };
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| *v = without_clock(std::mem::take(v))),
        _ => {}
    }
    value
}

#[tokio::test]
async fn message_updates_carry_pis_streaming_message_at_every_event() {
    for api in APIS {
        // One after the other: each program reads the paced frames at its own pace.
        let Some(ours) = recorded(false, api).await else { return };
        let Some(theirs) = recorded(true, api).await else { return };
        let types: Vec<&str> = ours.iter().filter_map(|r| r["assistantMessageEvent"]["type"].as_str()).collect();
        for expected in ["thinking_end", "text_end", "toolcall_end"] {
            assert!(types.contains(&expected), "{api}: no {expected} in {types:?}");
        }
        for (i, (record, pis)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(record, pis, "{api}, record {i}: pi-rpc, then pi 1.6.0");
        }
        assert_eq!(ours.len(), theirs.len(), "{api}: pi-rpc, then pi 1.6.0");
        // While it streams, the message says no stop reason yet; the partial is the message.
        let first = ours.iter().find(|r| r["type"] == "message_update").expect("an update");
        assert_eq!(first["message"]["stopReason"], "pending", "{api}: {first}");
        assert_eq!(first["message"], first["assistantMessageEvent"]["partial"], "{api}");
    }
}
