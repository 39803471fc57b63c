//! Prompt-cache warming, run by pi-rpc and by pi 1.6.0 side by side on the
//! same extension, model and fake model server: a model whose `promptCache`
//! lifetime is 15 s (`models.json`) has its last request re-sent with a
//! one-token cap 5 s after it, once pi's `cache_warming_decision` (or an
//! extension's override) says `warm`. Compared: the refresh request's body,
//! the decisions the handlers saw, the events the client saw, the `usage`
//! entries written to the session file and where they hang in the tree, and
//! `get_session_stats`.
//!
//! Nothing here is timed: each step waits for the event it expects (the
//! decision's `notify`, `entry_appended`), a line at most 20 s away. The
//! one margin is pi's own: the first decision comes 5 s after the request,
//! by when the fake server's run has long settled (the idle phase).
//!
//! Needs node 22, the host's packages and the reference from `target/tools`;
//! skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use pi_compat::fake_server::Reply;
use serde_json::{Map, Value, json};

use crate::clients::node22;
use crate::extension_host::{host_dir, host_settings, write_module};
use crate::extension_provider_events::{reference_cli, reference_command};
use crate::harness::{Pi, Sandbox, read_jsonl, types};

/// Answers the decisions in turn: pi's own (`warm`), `stop` (an override),
/// `warm` (an override of pi's `stop`), pi's own (`stop`); each one is
/// shown to the client as a `notify` first.
const DECIDER: &str = r#"import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  const answers: (string | undefined)[] = [undefined, "stop", "warm", undefined];
  let n = 0;
  pi.on("cache_warming_decision", (event, ctx) => {
    const answer = answers[n++];
    ctx.ui.notify(`decision ${n}: ${JSON.stringify(event)} -> ${answer ?? "pi's own"}`, "info");
    return answer === undefined ? undefined : { action: answer };
  });
}
"#;

/// Prompt sizes: the first reply's makes a refresh worth it (pi says
/// `warm`), the second's does not (pi says `stop`).
const BIG_PROMPT: u64 = 400_000;
const SMALL_PROMPT: u64 = 1_000;

/// What one program did.
struct Run {
    /// The handlers' view of each decision, as notified.
    decisions: Vec<String>,
    /// Event types from the first `agent_settled` to the second decision, and after the second prompt's.
    between: Vec<Vec<String>>,
    /// The `entry_appended` entries.
    announced: Vec<Value>,
    /// The model requests' bodies, in order.
    bodies: Vec<Value>,
    /// The session file's entries.
    entries: Vec<Value>,
    stats: Value,
}

fn notified(lines: &[Value]) -> Vec<String> {
    let notes = lines.iter().filter(|v| v["method"] == "notify");
    notes.filter_map(|v| v["message"].as_str().map(str::to_string)).collect()
}

fn is_decision(v: &Value, n: usize) -> bool {
    v["method"] == "notify" && v["message"].as_str().is_some_and(|m| m.starts_with(&format!("decision {n}:")))
}

/// A prompt, then its decisions until the second of them: the lines from
/// `agent_settled` on, and what was announced.
async fn prompt_and_decisions(pi: &mut Pi, id: &str, text: &str, first: usize) -> (Vec<Value>, Vec<Value>) {
    pi.send(json!({"id": id, "type": "prompt", "message": text})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(lines.iter().all(|v| v["type"] != "extension_error"), "{lines:?}");
    let mut after = pi.until(|v| is_decision(v, first)).await;
    after.extend(pi.until(|v| is_decision(v, first + 1)).await);
    let announced = after.iter().filter(|v| v["type"] == "entry_appended").map(|v| v["entry"].clone()).collect();
    (after, announced)
}

async fn drive(mut pi: Pi, sb: &Sandbox) -> Run {
    let (first, mut announced) = prompt_and_decisions(&mut pi, "p1", "hello", 1).await;
    let (second, more) = prompt_and_decisions(&mut pi, "p2", "again", 3).await;
    announced.extend(more);
    let stats = pi.call("stats", json!({"type": "get_session_stats"})).await;
    assert_eq!(stats["success"], true, "{stats}");
    let files = sb.session_files();
    assert_eq!(files.len(), 1, "one session file: {files:?}");
    let relevant =
        |lines: &[Value]| lines.iter().filter(|v| v["type"] != "message_update").cloned().collect::<Vec<_>>();
    let mut decisions = notified(&first);
    decisions.extend(notified(&second));
    Run {
        decisions,
        between: vec![types(&relevant(&first)), types(&relevant(&second))],
        announced,
        bodies: sb.server().requests().into_iter().map(|r| r.body).collect(),
        entries: read_jsonl(&files[0]).into_iter().skip(1).collect(),
        stats: stats["data"].clone(),
    }
}

/// The members of `b` that differ from `a`'s (a member only `a` has: null).
fn changed(a: &Value, b: &Value) -> Map<String, Value> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return Map::new() };
    let mut out = Map::new();
    for key in a.keys().chain(b.keys()) {
        if a.get(key) != b.get(key) {
            out.insert(key.clone(), b.get(key).cloned().unwrap_or(Value::Null));
        }
    }
    out
}

/// A `usage` entry without what differs from run to run (id, parent, time).
fn without_ids(entry: &Value) -> Value {
    let mut entry = entry.clone();
    if let Some(obj) = entry.as_object_mut() {
        for key in ["id", "parentId", "timestamp"] {
            obj.remove(key);
        }
    }
    entry
}

/// The entry before `entry` in the file, and the one after it (if any).
fn around<'a>(entries: &'a [Value], entry: &Value) -> (&'a Value, Option<&'a Value>) {
    let at = entries.iter().position(|e| e["id"] == entry["id"]).expect("the announced entry is in the file");
    (&entries[at.saturating_sub(1)], entries.get(at + 1))
}

#[tokio::test]
async fn cache_warming_refreshes_decides_and_records_as_in_pi() {
    let (Some(node), Some(dir)) = (node22(), host_dir()) else { return };
    let Some(cli) = reference_cli() else { return };
    let mut sandboxes = Vec::new();
    for _ in 0..2 {
        let sb = Sandbox::with_server().await;
        sb.write_models(&sb.server().base_url(), json!({"contextWindow": 1_000_000, "promptCache": {"short": 15}}));
        host_settings(&sb, &node, &dir, json!({"retry": {"baseDelayMs": 20}}));
        write_module(&sb, "decider.ts", DECIDER);
        // In request order: prompt, refresh, prompt, refresh.
        for (prompt, cached) in
            [(BIG_PROMPT, 0), (BIG_PROMPT, BIG_PROMPT), (SMALL_PROMPT, 0), (SMALL_PROMPT, SMALL_PROMPT)]
        {
            sb.server().push(Reply::text("Hello.").usage(prompt, 1, cached));
        }
        sandboxes.push(sb);
    }
    let ours = sandboxes[0].spawn(&[]);
    let mut reference = reference_command(&sandboxes[1], &node, &cli);
    reference.arg("--offline").env("PI_OFFLINE", "1");
    let theirs = Pi::start_unchecked(reference);
    let (ours, theirs) = tokio::join!(drive(ours, &sandboxes[0]), drive(theirs, &sandboxes[1]));

    // The decisions: pi's numbers, each handler's answer applied.
    assert_eq!(
        ours.decisions,
        [
            r#"decision 1: {"type":"cache_warming_decision","warmCost":0.120015,"missCost":1.38,"continuationProbability":0.15,"action":"warm"} -> pi's own"#,
            r#"decision 2: {"type":"cache_warming_decision","warmCost":0.120015,"missCost":1.38,"continuationProbability":0.15,"action":"warm"} -> stop"#,
            r#"decision 3: {"type":"cache_warming_decision","warmCost":0.00031499999999999996,"missCost":0.00345,"continuationProbability":0.15,"action":"stop"} -> warm"#,
            r#"decision 4: {"type":"cache_warming_decision","warmCost":0.00031499999999999996,"missCost":0.00345,"continuationProbability":0.15,"action":"stop"} -> pi's own"#,
        ]
    );
    assert_eq!(ours.decisions, theirs.decisions, "pi 1.6.0 decided the same");

    // Two prompts and two refreshes, each refresh its prompt's request capped at one token.
    for run in [&ours, &theirs] {
        assert_eq!(run.bodies.len(), 4, "a `stop` ends warming until the next request");
        for (prompt, refresh) in [(&run.bodies[0], &run.bodies[1]), (&run.bodies[2], &run.bodies[3])] {
            assert_eq!(changed(prompt, refresh), json!({"max_completion_tokens": 1}).as_object().cloned().unwrap());
        }
        assert_eq!(run.bodies[2]["messages"].as_array().map(Vec::len), Some(4), "the refresh is not in the context");
    }
    // The second prompt's conversation (after the system prompt, which names the sandbox).
    let conversation = |run: &Run| run.bodies[2]["messages"].as_array().map(|m| m[1..].to_vec());
    assert_eq!(conversation(&ours), conversation(&theirs));

    // The client saw each decision's notify and each refresh's entry, in the same order.
    assert_eq!(ours.between[0], ["extension_ui_request", "entry_appended", "extension_ui_request"]);
    assert_eq!(ours.between, theirs.between);

    // The entries: a `usage` entry per refresh, after its prompt's reply, before the next prompt.
    assert_eq!(ours.announced.len(), 2);
    for run in [&ours, &theirs] {
        for entry in &run.announced {
            let (before, after) = around(&run.entries, entry);
            assert_eq!(entry["parentId"], before["id"]);
            assert_eq!(before["message"]["role"], "assistant");
            if let Some(after) = after {
                assert_eq!(after["parentId"], entry["id"], "the conversation goes on from the usage entry");
            }
        }
        let written: Vec<&Value> = run.entries.iter().filter(|e| e["type"] == "usage").collect();
        assert_eq!(written, run.announced.iter().collect::<Vec<_>>(), "announced as written");
    }
    let normalized = |run: &Run| run.announced.iter().map(without_ids).collect::<Vec<_>>();
    assert_eq!(normalized(&ours)[1]["note"], "extension override");
    assert_eq!(normalized(&ours), normalized(&theirs));
    assert_eq!(
        serde_json::to_string(&ours.announced[0]).unwrap().split("\"kind\"").nth(1),
        serde_json::to_string(&theirs.announced[0]).unwrap().split("\"kind\"").nth(1),
        "the same members in the same order"
    );

    // The refreshes count in the session's totals.
    assert_eq!(ours.stats["tokens"], theirs.stats["tokens"]);
    assert_eq!(ours.stats["cost"], theirs.stats["cost"]);
    assert_eq!(ours.stats["tokens"]["cacheRead"], BIG_PROMPT + SMALL_PROMPT);
}
