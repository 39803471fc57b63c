//! Every event pi 1.6.0 emits to extensions, whole, side by side with pi: one
//! recorder extension (`fixtures/event_recorder.ts`) handles every event
//! the extension API declares and logs its payload and what `ctx` says,
//! while one rich session runs through pi-rpc and through pi 1.6.0 on the
//! same fake model server: tool calls (read, write, edit, bash), a steering
//! and a follow-up message, an abort, an auto-retry after a 500, `set_model`,
//! `cycle_model`, `set_thinking_level`, a user `bash`, a session name, a
//! compaction, a tree navigation, a UI prompt, an MCP server registered and
//! removed, `fork`, `new_session`, a reload, an input transform and the
//! `session_shutdown` at exit. The two logs, normalised (ids by first
//! appearance, timestamps, the sandbox's paths), must be the same.
//!
//! Needs node 22, the host's packages and the reference from
//! `target/tools`; skipped without them unless `PI_RPC_REQUIRE_TOOLS=1`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox};

const RECORDER: &str = include_str!("fixtures/event_recorder.ts");

/// The bash command the model runs while the test queues a steering and a
/// follow-up message: it waits for the file `gate` the test then writes.
const GATED: &str = "while [ ! -f gate ]; do sleep 0.05; done; echo through";

/// Run the whole session in pi-rpc or pi 1.6.0; the recorder's log, normalised.
async fn recorded(reference: bool) -> Option<Vec<Value>> {
    let mut recording = Recording::start(reference, json!({}), json!({})).await?;
    drive(&recording.sb, &mut recording.pi, &recording.log).await;
    Some(recording.finish().await)
}

/// pi-rpc or pi 1.6.0 running with the recorder in a sandbox of its own.
pub(crate) struct Recording {
    pub(crate) sb: Sandbox,
    pub(crate) pi: Pi,
    /// The recorder's log.
    pub(crate) log: PathBuf,
}

impl Recording {
    /// The program started with the recorder, its model's fields and settings
    /// over the defaults with `model` and `settings`.
    pub(crate) async fn start(reference: bool, model: Value, settings: Value) -> Option<Recording> {
        let sb = Sandbox::with_server().await;
        let mut fields = json!({"reasoning": true});
        if let (Some(fields), Some(extra)) = (fields.as_object_mut(), model.as_object()) {
            fields.extend(extra.clone());
        }
        sb.write_models(&sb.server().base_url(), fields);
        let log = sb.cwd.path().join("events.log");
        let quoted = Value::from(log.display().to_string()).to_string();
        crate::extension_host::write_module(&sb, "recorder.ts", &RECORDER.replace("LOG_PATH", &quoted));
        std::fs::write(sb.cwd.path().join("notes.txt"), "alpha\nbeta\n").expect("notes");
        let pi = start(&sb, reference, settings)?;
        Some(Recording { sb, pi, log })
    }

    /// Close the program's input, wait for its end: the recorder's log, normalised.
    pub(crate) async fn finish(mut self) -> Vec<Value> {
        self.pi.close_stdin();
        self.pi.wait().await;
        let text = std::fs::read_to_string(&self.log).expect("the recorder's log");
        normalised(&self.sb, &text)
    }
}

/// pi-rpc or pi 1.6.0 in `sb`, sessions saved, with a small compaction
/// window and fast retries (and `settings` over them).
fn start(sb: &Sandbox, reference: bool, settings: Value) -> Option<Pi> {
    let mut extra = json!({"compaction": {"keepRecentTokens": 40}, "retry": {"baseDelayMs": 20}});
    if let (Some(extra), Some(settings)) = (extra.as_object_mut(), settings.as_object()) {
        extra.extend(settings.clone());
    }
    crate::extension_awaited_events::start(sb, reference, extra)
}

async fn ok(pi: &mut Pi, id: &str, command: Value) -> Value {
    let r = pi.call(id, command).await;
    assert_eq!(r["success"], true, "{r}");
    r
}

/// A prompt (or command) run to its `agent_settled`.
pub(crate) async fn settled(pi: &mut Pi, id: &str, message: &str) {
    ok(pi, id, json!({"type": "prompt", "message": message})).await;
    pi.until_type("agent_settled").await;
}

/// Once the recorder's log at `log` has `times` records of `event`.
async fn recorded_times(log: &Path, event: &str, times: usize) {
    let marker = format!("{{\"event\":\"{event}\"");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_to_string(log).unwrap_or_default().matches(&marker).count() < times {
        assert!(tokio::time::Instant::now() < deadline, "no {event} ×{times} in the log");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// How far apart the frames of the recorded replies come: far enough that
/// each is mostly read and handed over before the next arrives (pi reads
/// the body on while the handlers run, so frames that come close together
/// mix by timing; `extension_stream_read_ahead` allows for that on a
/// loaded machine).
pub(crate) const FRAME_PACE_MS: u64 = 120;

/// `reply` with a fixed usage (the fake server's own counts the request's
/// characters, and pi-rpc's system prompt has its own words), paced: the
/// streaming message each `message_update` shows is the one after the read
/// of its event, and a frame's events come before the next frame's stream
/// event, in both programs.
pub(crate) fn with_usage(reply: Reply) -> Reply {
    reply.usage(300, 20, 0).paced_ms(FRAME_PACE_MS)
}

/// The session: each step waits for the program to finish the last.
async fn drive(sb: &Sandbox, pi: &mut Pi, log: &Path) {
    let server = sb.server();
    // Tools one by one, the prompt transformed by the recorder's `input` handler.
    server.push(with_usage(Reply::tool_calls([FakeToolCall::new("c1", "read", r#"{"path":"notes.txt"}"#)])));
    server.push(with_usage(Reply::tool_calls([FakeToolCall::new(
        "c2",
        "write",
        r#"{"path":"new.txt","content":"fresh\n"}"#,
    )])));
    let edit = r#"{"path":"notes.txt","edits":[{"oldText":"beta","newText":"gamma"}]}"#;
    server.push(with_usage(Reply::tool_calls([FakeToolCall::new("c3", "edit", edit)])));
    server.push(with_usage(Reply::text("tools done")));
    settled(pi, "p1", "xform: use the tools").await;
    // A steering and a follow-up message queued while bash waits for its gate.
    let gated = json!({"command": GATED}).to_string();
    server.push(with_usage(Reply::tool_calls([FakeToolCall::new("c4", "bash", &gated)])));
    server.push(with_usage(Reply::text("after steer")));
    server.push(with_usage(Reply::text("after follow-up")));
    ok(pi, "p2", json!({"type": "prompt", "message": "run the gated command"})).await;
    pi.until_type("tool_execution_start").await;
    ok(pi, "s", json!({"type": "steer", "message": "steer this"})).await;
    ok(pi, "f", json!({"type": "follow_up", "message": "and follow up"})).await;
    std::fs::write(sb.cwd.path().join("gate"), "").expect("gate");
    pi.until_type("agent_settled").await;
    // An abort mid-stream.
    server.push(with_usage(Reply::text_chunks(["partial ", "never"]).hang_after(1)));
    ok(pi, "p3", json!({"type": "prompt", "message": "hang"})).await;
    pi.until_type("message_update").await;
    pi.send(json!({"id": "a", "type": "abort"})).await;
    let lines = pi.until(|v| v["type"] == "response" && v["id"] == "a").await;
    if !lines.iter().any(|v| v["type"] == "agent_settled") {
        pi.until_type("agent_settled").await;
    }
    // An auto-retry after a 500.
    server.push(Reply::error(500, "boom"));
    server.push(with_usage(Reply::text("recovered")));
    settled(pi, "p4", "retry please").await;
    // Model and thinking level (their handlers are done, or started, before the answer).
    recorded_times(log, "agent_settled", 4).await;
    ok(pi, "m", json!({"type": "set_model", "provider": "fake", "modelId": "fake-other"})).await;
    ok(pi, "cm", json!({"type": "cycle_model"})).await;
    ok(pi, "t", json!({"type": "set_thinking_level", "level": "high"})).await;
    // A user bash, a session name, a compaction.
    ok(pi, "b", json!({"type": "bash", "command": "echo user-bash"})).await;
    ok(pi, "n", json!({"type": "set_session_name", "name": "recorded"})).await;
    server.push(with_usage(Reply::text("## Goal\nSummarised.")));
    ok(pi, "c", json!({"type": "compact"})).await;
    // Extension commands: tree navigation, a UI prompt, an MCP server.
    ok(pi, "tree", json!({"type": "prompt", "message": "/rec-tree"})).await;
    pi.send(json!({"id": "ask", "type": "prompt", "message": "/rec-ask"})).await;
    let request = pi.until(|v| v["type"] == "extension_ui_request" && v["method"] == "confirm").await;
    let id = request.last().map(|r| r["id"].clone()).unwrap_or_default();
    pi.send(json!({"type": "extension_ui_response", "id": id, "confirmed": true})).await;
    pi.until(|v| v["type"] == "extension_ui_request" && v["method"] == "notify").await;
    ok(pi, "mcp", json!({"type": "prompt", "message": "/rec-mcp"})).await;
    // Replacing the session: fork, new session, reload.
    let forkable = crate::native_sessions::data(pi, "fm", json!({"type": "get_fork_messages"})).await;
    let entry = forkable["messages"][0]["entryId"].clone();
    ok(pi, "fork", json!({"type": "fork", "entryId": entry})).await;
    ok(pi, "new", json!({"type": "new_session"})).await;
    ok(pi, "reload", json!({"type": "prompt", "message": "/rec-reload"})).await;
    // One more prompt in the reloaded runtime.
    server.push(with_usage(Reply::text("last")));
    settled(pi, "p5", "last one").await;
}

/// The log's records with the sandbox's paths, ids, timestamps and
/// durations made the same in both programs.
fn normalised(sb: &Sandbox, text: &str) -> Vec<Value> {
    let mut text = text.to_string();
    for (dir, name) in [(sb.agent_dir.path(), "<agent>"), (sb.cwd.path(), "<cwd>"), (sb.home.path(), "<home>")] {
        text = text.replace(&dir.display().to_string(), name);
    }
    text = text.replace(&sb.server().base_url(), "<server>");
    let mut names = Names::default();
    text.lines()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line).expect("a JSON record");
            names.normalise(&mut value, "");
            value
        })
        .collect()
}

/// Names given to ids and session files by first appearance.
#[derive(Default)]
struct Names {
    seen: HashMap<String, String>,
}

impl Names {
    fn name(&mut self, kind: &str, text: &str) -> String {
        let next = self.seen.values().filter(|name| name.starts_with(&format!("<{kind} "))).count() + 1;
        self.seen.entry(text.to_string()).or_insert_with(|| format!("<{kind} {next}>")).clone()
    }

    fn normalise(&mut self, value: &mut Value, key: &str) {
        if WORDING.contains(&key) {
            *value = words(value);
            return;
        }
        match value {
            Value::Object(map) => {
                // A member set to `undefined` counts as absent.
                map.retain(|_, v| v != "<undefined>");
                let system = map.get("role").is_some_and(|r| r == "system" || r == "developer");
                for (k, v) in map.iter_mut() {
                    if system && k == "content" {
                        *v = words(v);
                    } else {
                        self.normalise(v, k);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.normalise(v, key)),
            Value::Number(n) => {
                let large = n.as_f64().is_some_and(|f| f > 1e12);
                if large || ["durationMs", "timestamp", "wall_time_seconds"].contains(&key) {
                    *value = json!("<time>");
                }
            }
            Value::String(s) => {
                if let Some(kind) = id_kind(s) {
                    *value = json!(self.name(kind, s));
                } else if key == "date" || is_iso_time(s) {
                    *value = json!("<time>");
                } else if s.ends_with(".jsonl") {
                    *value = json!(self.name("file", s));
                }
            }
            _ => {}
        }
    }
}

/// Members whose text is pi-rpc's own wording (the system prompt, its
/// sections, the tools' snippets, guidelines and descriptions: DEVIATIONS,
/// "in pi-rpc's own words"); only their shape is compared (which tools have
/// a snippet, how many rules each has).
const WORDING: [&str; 5] = ["systemPrompt", "sections", "toolSnippets", "toolGuidelines", "description"];

/// `value` with every string in it replaced by `<words>`.
fn words(value: &Value) -> Value {
    match value {
        Value::String(_) => json!("<words>"),
        Value::Array(items) => Value::Array(items.iter().map(words).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), words(v))).collect()),
        other => other.clone(),
    }
}

fn is_hex(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

/// `id` for an entry id (8 hex digits), `uuid` for a UUID.
fn id_kind(s: &str) -> Option<&'static str> {
    let parts: Vec<&str> = s.split('-').collect();
    if s.len() == 8 && is_hex(s) {
        return Some("id");
    }
    let uuid = parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| is_hex(p));
    uuid.then_some("uuid")
}

fn is_iso_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && s.ends_with('Z')
}

/// The first record where `ours` and `theirs` part, with some before it.
pub(crate) fn first_difference(ours: &[Value], theirs: &[Value]) -> String {
    let at = ours.iter().zip(theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
    let names = |list: &[Value]| {
        list.iter().skip(at.saturating_sub(5)).take(10).map(|r| r["event"].to_string()).collect::<Vec<_>>().join(" ")
    };
    format!(
        "records {} (ours) and {} (pi's); first difference at {at}\n ours: {}\npi's: {}\n ours[{at}]: {}\npi's[{at}]: {}",
        ours.len(),
        theirs.len(),
        names(ours),
        names(theirs),
        ours.get(at).map(Value::to_string).unwrap_or_default(),
        theirs.get(at).map(Value::to_string).unwrap_or_default()
    )
}

/// For a developer: both logs written where `PI_RPC_EVENT_DUMP` says.
fn dump(ours: &[Value], theirs: &[Value]) {
    let Some(dir) = std::env::var_os("PI_RPC_EVENT_DUMP") else { return };
    let lines = |list: &[Value]| list.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    let _ = std::fs::write(Path::new(&dir).join("ours.jsonl"), lines(ours));
    let _ = std::fs::write(Path::new(&dir).join("theirs.jsonl"), lines(theirs));
}

/// `records` with what still differs from pi, as `compat/DEVIATIONS.md`
/// lists it ("Extension events, side by side"), made the same: a change
/// anywhere else fails the test.
pub(crate) fn without_known_differences(records: Vec<Value>) -> Vec<Value> {
    // The bash tool's partial output comes as the pipe is read: a matter of timing.
    records.into_iter().filter(|record| record["event"] != "tool_execution_update").collect()
}

#[tokio::test]
async fn every_event_reaches_extensions_with_pis_payloads_and_order() {
    let (Some(ours), Some(theirs)) = tokio::join!(recorded(false), recorded(true)) else { return };
    dump(&ours, &theirs);
    crate::extension_event_payloads::assert_named_payloads(&ours, &theirs);
    let events =
        |list: &[Value]| list.iter().map(|r| r["event"].as_str().unwrap_or("?").to_string()).collect::<Vec<_>>();
    for expected in ["session_shutdown", "user_bash", "session_compact", "session_tree", "model_select", "tool_call"] {
        assert!(events(&ours).iter().any(|e| e == expected), "no {expected}: {:?}", events(&ours));
    }
    let (ours, theirs) = (without_known_differences(ours), without_known_differences(theirs));
    crate::extension_stream_read_ahead::assert_same_but_read_ahead(&ours, &theirs);
}
