//! pi-ai's streaming message in an extension, side by side with pi 1.6.0,
//! on each wire API the fake model server serves: an extension streams one
//! reply (thinking, text, a tool call, usage) with pi-ai's `stream()` per
//! API and reports every event as its listener saw it (the partial message
//! then, its response id, usage, stop reason and the blocks' signatures
//! included), and what a listener reading the message asynchronously, between
//! events, saw of those fields (pi-ai sets each as soon as the provider says
//! it, the stop reason included, before the reply ends), also for a reply
//! the provider stops with an error stop reason (a content filter's, a
//! refusal), and what an RPC client sees of such a reply.
//!
//! Needs node 22, the host's packages and the reference pi from
//! `target/tools` (`scripts/install-test-tools.sh`); skipped without them
//! unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, spawn_reference};
use crate::extension_sdk_session::PACE_MS;
use crate::harness::Sandbox;
use crate::wire_apis::chatgpt_token;

/// The wire APIs compared, in the order the extension calls them.
const APIS: [&str; 7] = [
    "openai-completions",
    "anthropic-messages",
    "openai-responses",
    "google-generative-ai",
    "mistral-conversations",
    "bedrock-converse-stream",
    "openai-codex-responses",
];

/// An extension whose `/apis <api>` streams one reply from that API of
/// `CALLS` with pi-ai's `stream()`; it notifies every event as its listener
/// saw it and (`reads`) each change of the message's own fields a timer
/// reading it every few milliseconds saw, with the number of events seen by
/// then.
const STREAM_APIS: &str = r#"import { Type } from "@earendil-works/pi-ai";
import { stream } from "@earendil-works/pi-ai/compat";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const shout = { name: "shout", description: "Upper-cases a text", parameters: Type.Object({ text: Type.String() }) };
const CALLS: { api: string; options: any }[] = __CALLS__;

/** A value without clock readings. */
function seen(e: any): any {
  return JSON.parse(JSON.stringify(e, (key, v) => (["timestamp", "durationMs"].includes(key) ? undefined : v)));
}

/** The message's fields its events do not carry, as a listener reads them. */
function fields(m: any): string {
  const { stopReason, rawStopReason, errorMessage, responseId, usage } = m;
  return JSON.stringify({ stopReason, rawStopReason, errorMessage, responseId, usage });
}

export default function (pi: ExtensionAPI) {
  pi.registerCommand("apis", {
    handler: async (args, ctx) => {
      for (const { api, options } of CALLS.filter((c) => c.api === args.trim())) {
        const model = { ...ctx.model!, api, reasoning: true };
        const context = { systemPrompt: "You shout.", messages: [{ role: "user", content: "shout hi", timestamp: 1 }], tools: [shout] };
        const events: any[] = [];
        const reads: any[] = [];
        let message: any;
        let last = "";
        const read = () => {
          const now = message && fields(message);
          if (now && now !== last) reads.push([events.length, JSON.parse(now)]);
          if (now) last = now;
        };
        const timer = setInterval(read, 4);
        for await (const event of stream(model as any, context as any, { apiKey: "test-key-123", ...options })) {
          message ??= event.partial;
          events.push(seen(event));
        }
        clearInterval(timer);
        read();
        ctx.ui.notify(JSON.stringify({ events, reads }), "info");
      }
    },
  });
}
"#;

/// Thinking, text and a tool call, with the usage said.
fn tool_call_reply(_api: &str) -> Reply {
    Reply::text("Calling it.")
        .with_thinking("Loud.")
        .with_tool_call(FakeToolCall::new("c1", "shout", r#"{"text": "hi"}"#))
        .usage(40, 9, 8)
}

/// What `/apis <api>` saw, per API: `{events, reads}` as pi-rpc's or pi's
/// listener saw them; each API's reply made by `reply`, paced `pace_ms` a frame.
async fn stream_apis(reference: bool, pace_ms: u64, reply: fn(&str) -> Reply) -> Option<Value> {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return None };
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    // Codex over SSE (pi's default tries a WebSocket first, which the fake server refuses).
    host_settings(&sb, &node, &dir, json!({"transport": "sse"}));
    let codex = json!({"apiKey": chatgpt_token(), "transport": "sse"});
    let calls: Vec<Value> = APIS
        .iter()
        .map(|api| match *api {
            "openai-codex-responses" => json!({"api": api, "options": codex}),
            // pi-ai's AWS SDK speaks HTTP/2 unless told; the fake server speaks HTTP/1.1.
            "bedrock-converse-stream" => json!({"api": api, "options": {"env": {"AWS_BEDROCK_FORCE_HTTP1": "1"}}}),
            _ => json!({"api": api, "options": {}}),
        })
        .collect();
    write_module(&sb, "stream-apis.ts", &STREAM_APIS.replace("__CALLS__", &Value::Array(calls).to_string()));
    // Paced, so each frame is read on its own.
    for api in APIS {
        sb.server().push(reply(api).paced_ms(pace_ms));
    }
    let mut pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
    let mut seen = serde_json::Map::new();
    for api in APIS {
        pi.send(json!({"id": api, "type": "prompt", "message": format!("/apis {api}")})).await;
        let lines = pi.until(|v| v["method"] == "notify").await;
        assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{api}: {lines:?}");
        let note = lines.last().and_then(|v| v["message"].as_str()).unwrap_or_default();
        let note = serde_json::from_str(note).unwrap_or_else(|e| panic!("/apis {api} notified {note}: {e}"));
        seen.insert(api.to_string(), note);
    }
    Some(Value::Object(seen))
}

#[tokio::test]
async fn pi_ais_streaming_message_is_pis_at_every_event_on_every_api() {
    let Some(ours) = stream_apis(false, PACE_MS, tool_call_reply).await else { return };
    let Some(theirs) = stream_apis(true, PACE_MS, tool_call_reply).await else { return };
    for api in APIS {
        let (events, pis) =
            (ours[api]["events"].as_array().expect("events"), theirs[api]["events"].as_array().expect("events"));
        // The reply came through: thinking (but on Mistral's API, whose thinking the fake
        // server does not render), text and the tool call, then `done`.
        assert_eq!(events.last().map(|e| &e["type"]), Some(&json!("done")), "{api}: {events:?}");
        let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        let thought = api == "mistral-conversations" || types.contains(&"thinking_end");
        assert!(types.contains(&"toolcall_end") && types.contains(&"text_end") && thought, "{api}: {types:?}");
        for (i, (event, pi)) in events.iter().zip(pis).enumerate() {
            assert_eq!(event, pi, "{api}, event {i}: pi-rpc, then pi 1.6.0");
        }
        assert_eq!(events.len(), pis.len(), "{api}: pi-rpc, then pi 1.6.0");
    }
}

/// The message's states a timer saw, in order, without the number of events
/// seen by then: which event a timer's read falls after depends on the
/// machine's load (each side's events are compared whole, and each test says
/// what must be read before which event).
fn read_states(reads: &Value) -> Vec<Value> {
    reads.as_array().map(|reads| reads.iter().map(|read| read[1].clone()).collect()).unwrap_or_default()
}

/// Each frame a long pause from the next, so that the timer reads the
/// message between any two reads of the provider.
const SLOW_PACE_MS: u64 = 150;

#[tokio::test]
async fn a_listener_reading_the_message_between_events_sees_pis_stop_reason_and_usage() {
    let Some(ours) = stream_apis(false, SLOW_PACE_MS, tool_call_reply).await else { return };
    let Some(theirs) = stream_apis(true, SLOW_PACE_MS, tool_call_reply).await else { return };
    for api in APIS {
        let (reads, pis) = (read_states(&ours[api]["reads"]), read_states(&theirs[api]["reads"]));
        assert_eq!(reads, pis, "{api}: pi-rpc, then pi 1.6.0");
    }
    // pi-ai says the stop reason as it reads it, before the reply ends: openai-completions'
    // `finish_reason` before the tool call's block ends (at the stream's end), Anthropic's
    // `message_delta` before `done`.
    for (api, before) in [("openai-completions", "toolcall_end"), ("anthropic-messages", "done")] {
        let events = ours[api]["events"].as_array().expect("events");
        let ended = events.iter().position(|e| e["type"] == before).expect(before);
        let stopped = ours[api]["reads"]
            .as_array()
            .and_then(|reads| reads.iter().find(|r| r[1]["stopReason"] == "toolUse"))
            .map(|r| r[0].as_u64().unwrap_or(u64::MAX));
        assert!(stopped.is_some_and(|seen| seen <= ended as u64), "{api}: {}", ours[api]["reads"]);
    }
}

/// A reply the provider stops with an error stop reason of its API (a
/// content filter's, a refusal, a guardrail's), after some text.
fn filtered_reply(api: &str) -> Reply {
    let reason = match api {
        "anthropic-messages" => "refusal",
        "google-generative-ai" => "safety",
        "bedrock-converse-stream" => "guardrail_intervened",
        _ => "content_filter",
    };
    Reply::text("Partly said.").with_thinking("Hm.").usage(40, 9, 8).finish_reason(reason)
}

#[tokio::test]
async fn an_error_stop_reason_read_mid_stream_is_set_at_once_as_pi_ai_sets_it() {
    let Some(ours) = stream_apis(false, SLOW_PACE_MS, filtered_reply).await else { return };
    let Some(theirs) = stream_apis(true, SLOW_PACE_MS, filtered_reply).await else { return };
    for api in APIS {
        // Every event as pi's listener saw it: the blocks that end after the stop reason
        // was read carry it (with its raw reason and, but on Gemini's API, its error), and
        // so does the call's `error`.
        let (events, pis) = (&ours[api]["events"], &theirs[api]["events"]);
        assert_eq!(events, pis, "{api}: pi-rpc, then pi 1.6.0");
        assert_eq!(events.as_array().and_then(|e| e.last()).map(|e| &e["type"]), Some(&json!("error")), "{api}");
        let (reads, pis) = (read_states(&ours[api]["reads"]), read_states(&theirs[api]["reads"]));
        assert_eq!(reads, pis, "{api}: pi-rpc, then pi 1.6.0");
    }
    // Read between events, before the call ends (but on Codex's backend, whose terminal
    // response ends its stream): the error stop reason is there at once.
    for api in APIS.iter().filter(|api| **api != "openai-codex-responses") {
        let total = ours[api]["events"].as_array().map_or(0, Vec::len) as u64;
        let stopped = ours[api]["reads"]
            .as_array()
            .and_then(|reads| reads.iter().find(|r| r[1]["stopReason"] == "error"))
            .and_then(|r| r[0].as_u64());
        assert!(stopped.is_some_and(|seen| seen < total), "{api}: {}", ours[api]["reads"]);
    }
}

/// The assistant messages of pi-rpc's or pi's RPC output for one prompt
/// answered with a content filter's stop: `(message_end messages, the
/// usage of each message_update)`.
async fn filtered_prompt_over_rpc(reference: bool) -> Option<(Vec<Value>, Vec<Value>)> {
    let node = node22()?;
    let cli = reference_cli()?;
    let sb = Sandbox::with_server().await;
    sb.server().push(filtered_reply("openai-completions").paced_ms(PACE_MS));
    let mut pi = if reference { spawn_reference(&sb, &node, &cli) } else { sb.spawn(&["--no-session"]) };
    pi.send(json!({"id": "p", "type": "prompt", "message": "say it"})).await;
    let lines = pi.until(|v| v["type"] == "agent_end").await;
    let ended = lines
        .iter()
        .filter(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
        .map(|v| {
            let m = &v["message"];
            json!({"stopReason": m["stopReason"], "rawStopReason": m["rawStopReason"], "errorMessage": m["errorMessage"]})
        })
        .collect();
    let updates = lines.iter().filter(|v| v["type"] == "message_update").map(|v| v["usage"].clone()).collect();
    Some((ended, updates))
}

#[tokio::test]
async fn an_rpc_client_sees_an_error_stop_reason_as_pis_client_does() {
    let Some(ours) = filtered_prompt_over_rpc(false).await else { return };
    let Some(theirs) = filtered_prompt_over_rpc(true).await else { return };
    assert_eq!(ours.0, theirs.0, "message_end: pi-rpc, then pi 1.6.0");
    assert_eq!(ours.0.first().map(|m| &m["rawStopReason"]), Some(&json!("content_filter")));
    assert_eq!(ours.1, theirs.1, "message_update usage: pi-rpc, then pi 1.6.0");
}
