//! Where `provider_stream_event` falls among the agent's events, side by
//! side with pi 1.6.0. pi-ai hands the agent the reply's `start` before it
//! reads the body, then awaits the handlers of each parsed event before it
//! decodes it. So, in both programs: a reply's `message_start` comes before
//! its first stream event, even when the whole body is at hand at once; and
//! each delta's `message_update` comes after the stream event that carried
//! it. Where frames arrive together, how the two kinds interleave is a
//! matter of timing in pi: the test checks these rules on both logs and
//! compares each kind apart.
//!
//! Needs node 22, the host's packages and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::extension_event_stream::settled;
use crate::harness::Sandbox;

/// Logs, one JSON array a line, the response, the stream events' deltas
/// and the agent's message events.
const PLACER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { appendFileSync } from "node:fs";

const LOG: string = LOG_PATH;
const log = (line: unknown[]) => appendFileSync(LOG, JSON.stringify(line) + "\n");

export default function (pi: ExtensionAPI) {
  pi.on("after_provider_response", () => log(["response"]));
  pi.on("provider_stream_event", (event: any) => {
    const delta = event.data?.choices?.[0]?.delta ?? {};
    const args = (delta.tool_calls ?? []).map((call: any) => call.function?.arguments ?? "").join("");
    log(["stream", delta.content ?? "", args]);
  });
  pi.on("message_start", (event) => log(["message_start", event.message.role]));
  pi.on("message_update", (event) => {
    const update = event.assistantMessageEvent as any;
    log(["update", update.type, update.delta ?? ""]);
  });
  pi.on("message_end", (event) => log(["message_end", event.message.role]));
}
"#;

/// Where `records` break pi's placement of the stream events: a stream
/// event of a reply before its `message_start`, or a delta's
/// `message_update` before the stream event that carried it.
fn misplaced(records: &[Value]) -> Vec<String> {
    let mut broken = Vec::new();
    // Between a response and its reply's `message_start`.
    let mut awaiting_start = false;
    // Deltas the stream events carried that no update showed yet.
    let mut carried = std::collections::VecDeque::new();
    for (at, record) in records.iter().enumerate() {
        match (record[0].as_str().unwrap_or_default(), &record[1], &record[2]) {
            ("response", ..) => awaiting_start = true,
            ("message_start", role, _) if role == "assistant" => awaiting_start = false,
            ("stream", content, args) => {
                if awaiting_start {
                    broken.push(format!("{at}: a stream event before its reply's message_start"));
                }
                carried.extend([content, args].into_iter().filter(|d| *d != "").cloned());
            }
            // A delta shown before the stream event that carried it was taken.
            ("update", kind, delta) if delta != "" && carried.pop_front().as_ref() != Some(delta) => {
                broken.push(format!("{at}: {kind} {delta} before the stream event that carried it"));
            }
            _ => {}
        }
    }
    broken
}

/// `records` of one kind: the stream events, or the others.
fn of_kind(records: &[Value], stream_events: bool) -> Vec<Value> {
    records.iter().filter(|r| (r[0] == "stream") == stream_events).cloned().collect()
}

/// pi-rpc or pi 1.6.0 with the placer answering one prompt with `replies`: its log.
async fn placed(reference: bool, replies: Vec<Reply>) -> Option<Vec<Value>> {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({}));
    let log = sb.cwd.path().join("placed.log");
    let quoted = Value::from(log.display().to_string()).to_string();
    crate::extension_host::write_module(&sb, "placer.ts", &PLACER.replace("LOG_PATH", &quoted));
    std::fs::write(sb.cwd.path().join("notes.txt"), "alpha\n").expect("notes");
    let mut pi = crate::extension_awaited_events::start(&sb, reference, json!({}))?;
    for reply in replies {
        sb.server().push(reply);
    }
    settled(&mut pi, "p", "go").await;
    pi.close_stdin();
    pi.wait().await;
    let text = std::fs::read_to_string(&log).expect("the placer's log");
    Some(text.lines().map(|line| serde_json::from_str(line).expect("a JSON record")).collect())
}

/// Replies whose frames come at once after the first: the body of each is
/// at hand when the answer begins (parts a little apart in the second, so
/// some frames are read alone).
fn bursts() -> Vec<Reply> {
    let read = FakeToolCall::new("c1", "read", r#"{"path":"notes.txt"}"#);
    vec![
        Reply::tool_calls([read]).usage(300, 20, 0),
        Reply::text_chunks(["one ", "two ", "three"]).usage(300, 20, 0).delay_ms(30),
    ]
}

#[tokio::test]
async fn stream_events_fall_where_pi_places_them_among_the_agents_events() {
    let (Some(ours), Some(theirs)) = tokio::join!(placed(false, bursts()), placed(true, bursts())) else {
        return;
    };
    assert!(of_kind(&theirs, true).len() >= 8, "pi's stream events: {theirs:?}");
    assert_eq!(misplaced(&theirs), Vec::<String>::new(), "pi 1.6.0's placement: {theirs:?}");
    assert_eq!(misplaced(&ours), Vec::<String>::new(), "pi-rpc's placement: {ours:?}");
    for stream_events in [true, false] {
        let (ours, theirs) = (of_kind(&ours, stream_events), of_kind(&theirs, stream_events));
        assert_eq!(ours, theirs, "pi-rpc's (left) and pi 1.6.0's (right)");
    }
}
