//! Where `provider_stream_event` falls among the agent's events, side by
//! side with pi 1.6.0. pi-ai hands the agent the reply's `start` before it
//! reads the body, then awaits the handlers of each parsed event before it
//! decodes it. So, in both programs: a reply's `message_start` comes before
//! its first stream event, even when the whole body is at hand at once; and
//! each delta's `message_update` comes after the stream event that carried
//! it. Where frames arrive together, how the two kinds interleave is a
//! matter of timing in pi: the test checks these rules on both logs and
//! compares each kind apart. Where each frame is read alone, pi's order is
//! fixed: a frame's `message_update` reaches its handlers before the next
//! frame's stream event, even when a stream event's handler keeps the
//! reader busy; and while a `message_update` handler waits on a timer,
//! pi-ai reads on and hands over the next frames' stream events.
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
// "busy": the first text's stream event holds the reader 220 ms without
// waiting; "slow": the first text delta's update waits 1 s on a timer.
const MODE: string = MODE_NAME;
let held = false;

export default function (pi: ExtensionAPI) {
  pi.on("after_provider_response", () => log(["response"]));
  pi.on("provider_stream_event", (event: any) => {
    const delta = event.data?.choices?.[0]?.delta ?? {};
    const args = (delta.tool_calls ?? []).map((call: any) => call.function?.arguments ?? "").join("");
    log(["stream", delta.content ?? "", args]);
    if (MODE === "busy" && delta.content && !held) {
      held = true;
      const until = Date.now() + 220;
      while (Date.now() < until) {}
    }
  });
  pi.on("message_start", (event) => log(["message_start", event.message.role]));
  pi.on("message_update", async (event) => {
    const update = event.assistantMessageEvent as any;
    log(["update", update.type, update.delta ?? ""]);
    if (MODE === "slow" && update.type === "text_delta" && !held) {
      held = true;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
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

/// pi-rpc or pi 1.6.0 with the placer (in `mode`) answering one prompt with `replies`: its log.
async fn placed(reference: bool, mode: &str, replies: Vec<Reply>) -> Option<Vec<Value>> {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({}));
    let log = sb.cwd.path().join("placed.log");
    let quoted = Value::from(log.display().to_string()).to_string();
    let module = PLACER.replace("LOG_PATH", &quoted).replace("MODE_NAME", &Value::from(mode).to_string());
    crate::extension_host::write_module(&sb, "placer.ts", &module);
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
    let (Some(ours), Some(theirs)) = tokio::join!(placed(false, "", bursts()), placed(true, "", bursts())) else {
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

/// A text reply whose frames come `pace` ms apart, each read alone.
fn paced(pace: u64) -> Vec<Reply> {
    vec![Reply::text_chunks(["one ", "two ", "three ", "four"]).usage(300, 20, 0).paced_ms(pace)]
}

/// pi-rpc's and pi 1.6.0's logs in `mode` for frames `pace` ms apart, the
/// same as one list (stream events and the agent's events together).
async fn same_order(mode: &str, pace: u64) {
    let (Some(ours), Some(theirs)) = tokio::join!(placed(false, mode, paced(pace)), placed(true, mode, paced(pace)))
    else {
        return;
    };
    assert!(of_kind(&theirs, true).len() >= 5, "pi's stream events: {theirs:?}");
    assert_eq!(misplaced(&theirs), Vec::<String>::new(), "pi 1.6.0's placement: {theirs:?}");
    assert_eq!(ours, theirs, "pi-rpc's (left) and pi 1.6.0's (right)");
}

/// A stream event's handler that keeps the reader busy without waiting:
/// the next frame arrives meanwhile, yet its stream event comes after the
/// last frame's `message_update` (pi reads it in the next I/O callback,
/// once the agent handed the update to its handlers).
#[tokio::test]
async fn a_frames_update_reaches_the_handlers_before_the_next_frames_stream_event() {
    same_order("busy", 150).await;
}

/// A `message_update` handler waiting on a timer: pi-ai reads on, and the
/// next frames' stream events reach their handlers before it is done.
#[tokio::test]
async fn stream_events_go_on_while_a_message_update_handler_waits() {
    same_order("slow", 100).await;
}
