//! Reliability end to end: `get_tree` on a session chain far deeper than the
//! old recursive walk survived (both dialects, and after `switch_session`);
//! tool calls whose arguments did not arrive whole are never executed; a
//! provider's huge error body is cut to a bounded `errorMessage`; bash
//! full-output files do not outlive what refers to them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox};

/// Entries of the deep chain: the recursive walk died at about 5,900.
const CHAIN: usize = 12_000;

/// A session file whose entries form one chain of `CHAIN` messages.
fn write_chain(dir: &Path) -> PathBuf {
    let mut text =
        String::from(r#"{"type":"session","version":3,"id":"deep","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#);
    text.push('\n');
    for i in 0..CHAIN {
        let parent = if i == 0 { "null".to_string() } else { format!("\"e{}\"", i - 1) };
        let _ = writeln!(
            text,
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"q{i}","timestamp":{i}}}}}"#
        );
    }
    let path = dir.join("deep.jsonl");
    std::fs::write(&path, text).expect("write chain");
    path
}

/// The next line that is not an event or notification, checked to be one
/// valid JSON value (with an iterative parser: it nests `CHAIN` levels deep).
async fn raw_reply(pi: &mut Pi) -> String {
    loop {
        let Some(line) = pi.next_line().await else { panic!("output ended; stderr: {}", pi.stderr()) };
        if line.contains(r#""type":"response""#) || line.starts_with(r#"{"jsonrpc":"2.0","id""#) {
            assert!(serde_json::from_str::<Box<RawValue>>(&line).is_ok(), "reply is not JSON");
            return line;
        }
    }
}

fn assert_whole_chain(reply: &str) {
    // Opening the file may append the model and thinking level it switched to.
    let nodes = reply.matches(r#""children":["#).count();
    assert!((CHAIN..CHAIN + 3).contains(&nodes), "one node per entry: {nodes}");
    let last = format!(r#""id":"e{}","parentId":"e{}""#, CHAIN - 1, CHAIN - 2);
    assert!(reply.contains(&last), "the deepest entry is there");
}

#[tokio::test]
async fn get_tree_answers_on_a_deep_chain_in_both_dialects() {
    let sb = Sandbox::offline();
    let path = write_chain(sb.cwd.path());
    let file = path.to_string_lossy().into_owned();

    // Native, reached through switch_session.
    let mut pi = sb.spawn(&["--no-session"]);
    let sw = pi.call("sw", json!({"type": "switch_session", "sessionPath": file})).await;
    assert_eq!(sw["success"], true, "{sw}");
    pi.send(json!({"id": "t", "type": "get_tree"})).await;
    let reply = raw_reply(&mut pi).await;
    assert!(reply.starts_with(r#"{"id":"t","type":"response","command":"get_tree","success":true"#), "{:.200}", reply);
    assert_whole_chain(&reply);
    let state = pi.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["messageCount"], CHAIN, "the session goes on");

    // JSON-RPC, opened with --session.
    let mut pi = sb.spawn(&["--session", &file]);
    pi.send(json!({"jsonrpc": "2.0", "id": 1, "method": "getTree"})).await;
    let reply = raw_reply(&mut pi).await;
    assert!(reply.starts_with(r#"{"jsonrpc":"2.0","id":1,"result":{"tree":["#), "{:.200}", reply);
    assert_whole_chain(&reply);
    pi.send(json!({"jsonrpc": "2.0", "id": 2, "method": "getState"})).await;
    let state: Value = serde_json::from_str(&raw_reply(&mut pi).await).expect("state");
    assert_eq!(state["result"]["messageCount"], CHAIN);
}

/// The tool results the model was sent in request `n`.
fn tool_results_sent(sb: &Sandbox, n: usize) -> Vec<String> {
    let requests = sb.server().requests();
    let messages = requests[n].body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect()
}

#[tokio::test]
async fn tool_calls_cut_off_or_broken_are_never_executed() {
    let sb = Sandbox::with_server().await;
    let s = sb.server();
    // Cut off by the token limit inside the arguments, then one that parsed
    // but still belongs to a cut-off reply (pi 1.6.0 runs neither).
    s.push(Reply::tool_call("c1", "bash", r#"{"command": "echo TRUNC > trunc.txt"#).finish_reason("length"));
    s.push(
        Reply::tool_calls([
            FakeToolCall::new("c2", "write", r#"{"path": "whole.txt", "content": "all of it"}"#),
            FakeToolCall::new("c3", "write", r#"{"path": "half.txt", "content": "the first ha"#),
        ])
        .finish_reason("length"),
    );
    // Broken JSON on a normal finish is not "repaired" into a command.
    s.push(Reply::tool_call("c4", "bash", r#"{"command": "echo BROKEN > broken.txt""#));
    s.push(Reply::text("done"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;

    for file in ["trunc.txt", "whole.txt", "half.txt", "broken.txt"] {
        assert!(!sb.cwd.path().join(file).exists(), "{file} was written by a call that must not run");
    }
    let ends: Vec<&Value> = lines.iter().filter(|v| v["type"] == "tool_execution_end").collect();
    assert_eq!(ends.len(), 4);
    assert!(ends.iter().all(|e| e["isError"] == true), "{ends:?}");
    let limit = "was not executed: the response hit the output token limit, so its arguments may be truncated. \
                 Re-issue the tool call with complete arguments.";
    assert_eq!(tool_results_sent(&sb, 1), [format!("Tool call \"bash\" {limit}")]);
    assert_eq!(
        tool_results_sent(&sb, 2)[1..],
        [format!("Tool call \"write\" {limit}"), format!("Tool call \"write\" {limit}")]
    );
    let broken = tool_results_sent(&sb, 3).pop().unwrap_or_default();
    assert!(broken.starts_with("Invalid arguments for tool \"bash\": EOF while parsing"), "{broken}");
    assert!(broken.ends_with("Received arguments:\n{\"command\": \"echo BROKEN > broken.txt\""), "{broken}");

    // The assistant message records why, with `{}` as the arguments.
    let ends: Vec<&Value> =
        lines.iter().filter(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant").collect();
    let cut = &ends[0]["message"]["content"][0];
    assert_eq!(cut["arguments"], json!({}));
    assert!(cut["argumentsError"].as_str().unwrap_or("").contains("Received arguments:\n{\"command\": \"echo TRUNC"));
    assert_eq!(ends[1]["message"]["content"][0]["arguments"]["content"], "all of it");
}

#[tokio::test]
async fn a_5_mb_error_body_becomes_a_bounded_error_message() {
    let sb = Sandbox::with_server().await;
    // The key echoed back right where the text is cut must not leak, not even in part.
    let mut body = "x".repeat(65_420);
    body.push_str("test-key-123");
    body.push_str(&"y".repeat(5_000_000 - body.len()));
    sb.server().push(Reply::error(400, body));
    let mut pi = sb.spawn(&[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    let end = lines.iter().find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant").expect("end");
    let message = end["message"]["errorMessage"].as_str().unwrap_or_default();
    assert!(message.starts_with("400 xxxx"), "{:.80}", message);
    assert!(message.len() <= 64 * 1024, "{}", message.len());
    assert!(message.ends_with("; the response body had 5000000 bytes]"), "{}", &message[message.len() - 120..]);
    let stdout: usize = pi.transcript.iter().map(String::len).sum();
    assert!(stdout < 400_000, "{stdout} bytes on stdout");
    assert!(!pi.transcript.iter().any(|l| l.contains("test-key")), "the key leaked");
    let state = pi.call("s", json!({"type": "get_state"})).await;
    let file = PathBuf::from(state["data"]["sessionFile"].as_str().expect("session file"));
    let saved = std::fs::read_to_string(file).expect("session");
    assert!(saved.len() < 100_000 && !saved.contains("test-key"), "{} bytes in the session", saved.len());
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() { stack.push(path) } else { out.push(path) }
        }
    }
    out
}

#[tokio::test]
async fn bash_full_output_files_are_removed_unless_a_saved_session_refers_to_them() {
    let sb = Sandbox::with_server().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let s = sb.server();
    s.push(Reply::tool_call("c1", "bash", r#"{"command": "seq 1 5000"}"#));
    s.push(Reply::text("done"));
    s.push(Reply::tool_call("c2", "bash", r#"{"command": "seq 1 6000"}"#));
    s.push(Reply::text("done"));

    // Short output: no file at all. Long output: one file while the agent runs.
    let mut pi = sb.spawn_with_env(&["--no-session"], &[("TMPDIR", tmp.path())]);
    let short = pi.call("b", json!({"type": "bash", "command": "echo short"})).await;
    assert_eq!(short["data"]["fullOutputPath"], Value::Null);
    assert!(files_under(tmp.path()).is_empty(), "{:?}", files_under(tmp.path()));
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until_type("agent_settled").await;
    let made = files_under(tmp.path());
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].file_name().is_some_and(|n| n.to_string_lossy().starts_with("pi-bash-")));
    pi.close_stdin();
    assert!(pi.wait().await.success());
    assert!(!tmp.path().read_dir().expect("tmp").any(|_| true), "nothing refers to it: gone, with its directory");

    // A saved session refers to its tool result's file: kept.
    let mut pi = sb.spawn_with_env(&[], &[("TMPDIR", tmp.path())]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until_type("agent_settled").await;
    pi.close_stdin();
    assert!(pi.wait().await.success());
    let left = files_under(tmp.path());
    assert_eq!(left.len(), 1, "{left:?}");
    let session = std::fs::read_to_string(&sb.session_files()[0]).expect("session");
    assert!(session.contains(&left[0].display().to_string()));
}
