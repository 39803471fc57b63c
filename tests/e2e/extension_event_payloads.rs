//! Payload details of the events pi 1.6.0 gives extensions, checked by name
//! against pi on the logs of the event recorder (`extension_event_stream.rs`):
//! a built-in tool's `tool_result` without `details` and its
//! `tool_execution_end` with `result.structuredContent`, the snippets and
//! rules of every registered tool in `before_agent_start`, no
//! `after_provider_response` for an error status pi-ai's SDK throws on, no
//! `previousSummary` without an earlier summary, the `pendingMessages` the
//! next delivery takes, and, while pi compacts (a `compact` command, or on
//! its own past the threshold) or navigates the tree, `ctx.isIdle()` false
//! and the summary request's `before_provider_headers` alone.
//!
//! Needs node 22, the host's packages and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::extension_event_stream::{Recording, settled, with_usage, without_known_differences};

/// The first record of `event` whose payload's `toolName` is `tool` (any when `None`).
fn first<'a>(records: &'a [Value], event: &str, tool: Option<&str>) -> &'a Value {
    records
        .iter()
        .find(|r| r["event"] == event && tool.is_none_or(|t| r["payload"]["toolName"] == t))
        .unwrap_or(&Value::Null)
}

/// The member names of `value`, in order.
fn keys(value: &Value) -> Vec<String> {
    value.as_object().map(|map| map.keys().cloned().collect()).unwrap_or_default()
}

/// What `ctx.isIdle()` said in each record of the compaction and tree events.
fn idle_while_busy(records: &[Value]) -> Vec<Value> {
    let busy = ["session_before_compact", "session_compact", "session_before_tree", "session_tree"];
    records
        .iter()
        .filter(|r| busy.iter().any(|e| r["event"] == *e))
        .map(|r| json!([r["event"], r["ctx"]["idle"]]))
        .collect()
}

/// The events between each `session_before_compact` and its `session_compact`:
/// those of the summary requests.
fn summary_request_events(records: &[Value]) -> Vec<Vec<Value>> {
    let mut rounds = Vec::new();
    let mut current: Option<Vec<Value>> = None;
    for record in records {
        match record["event"].as_str() {
            Some("session_before_compact") => current = Some(Vec::new()),
            Some("session_compact") => rounds.extend(current.take()),
            Some(event) if event != "provider_stream_event" => {
                if let Some(list) = &mut current {
                    list.push(json!(event));
                }
            }
            _ => {}
        }
    }
    rounds
}

/// The details this test names, as one program's log has them.
fn named_details(records: &[Value]) -> Value {
    let options = &first(records, "before_agent_start", None)["payload"]["systemPromptOptions"];
    let boundary_pending: Vec<Value> = records
        .iter()
        .filter(|r| r["event"] == "turn_end" || r["event"] == "agent_before_settle")
        .map(|r| json!([r["event"], r["payload"]["context"]["pendingMessages"]]))
        .collect();
    let statuses: Vec<Value> = records
        .iter()
        .filter(|r| r["event"] == "after_provider_response")
        .map(|r| r["payload"]["status"].clone())
        .collect();
    json!({
        "read's tool_result members": keys(&first(records, "tool_result", Some("read"))["payload"]),
        "read's tool_execution_end result": first(records, "tool_execution_end", Some("read"))["payload"]["result"],
        "bash's tool_execution_end result members":
            keys(&first(records, "tool_execution_end", Some("bash"))["payload"]["result"]),
        "toolSnippets of": keys(&options["toolSnippets"]),
        "toolGuidelines of": keys(&options["toolGuidelines"]),
        "after_provider_response statuses": statuses,
        "session_before_compact preparation members":
            keys(&first(records, "session_before_compact", None)["payload"]["preparation"]),
        "turn_end / agent_before_settle pendingMessages": boundary_pending,
        "ctx.isIdle() while compacting or navigating": idle_while_busy(records),
        "events of the summary requests": summary_request_events(records),
    })
}

/// Each named detail of `ours` is pi's (`theirs`), and pi's log has what
/// makes it worth checking.
pub(crate) fn assert_named_payloads(ours: &[Value], theirs: &[Value]) {
    let (ours, theirs) = (named_details(ours), named_details(theirs));
    let summaries = theirs["events of the summary requests"].as_array().map_or(0, Vec::len);
    assert!(summaries > 0, "pi compacted: {theirs:#}");
    if let Some(map) = theirs.as_object() {
        for (name, pis) in map {
            assert_eq!(ours[name], *pis, "{name}: pi-rpc's (left) and pi 1.6.0's (right)");
        }
    }
}

/// A session that crosses the compaction threshold after its second answer
/// (window 4,000, reserve 1,000), in pi-rpc or pi 1.6.0: the recorder's log.
async fn compacted_past_the_threshold(reference: bool) -> Option<Vec<Value>> {
    let model = json!({"contextWindow": 4000});
    let settings = json!({"compaction": {"keepRecentTokens": 40, "reserveTokens": 1000}});
    let mut recording = Recording::start(reference, model, settings).await?;
    let server = recording.sb.server();
    server.push(with_usage(Reply::text("first answer")));
    // Paced as `with_usage` paces: each update shows the message after its own read, in both.
    server.push(Reply::text("second answer").usage(3400, 20, 0).paced_ms(crate::extension_event_stream::FRAME_PACE_MS));
    server.push(with_usage(Reply::text("## Goal\nSummarised.")));
    let long = |word: &str| format!("{word} {}", "word ".repeat(80));
    settled(&mut recording.pi, "p1", &long("one")).await;
    settled(&mut recording.pi, "p2", &long("two")).await;
    Some(recording.finish().await)
}

#[tokio::test]
async fn a_threshold_compaction_shows_extensions_what_pi_shows() {
    let (Some(ours), Some(theirs)) =
        tokio::join!(compacted_past_the_threshold(false), compacted_past_the_threshold(true))
    else {
        return;
    };
    let reason = |records: &[Value]| first(records, "session_before_compact", None)["payload"]["reason"].clone();
    assert_eq!(reason(&theirs), "threshold", "pi compacted on its own");
    assert_named_payloads(&ours, &theirs);
    let (ours, theirs) = (without_known_differences(ours), without_known_differences(theirs));
    crate::extension_stream_read_ahead::assert_same_but_read_ahead(&ours, &theirs);
}
