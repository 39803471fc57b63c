//! Native dialect: tool calls end to end (each tool, parallel calls, abort
//! mid-tool) and the RPC `bash` command.

use pi_compat::fake_server::{FakeToolCall, Reply};
use serde_json::{Value, json};

use crate::harness::{Sandbox, types};

const ALL_TOOLS: &str = "read,bash,edit,write,grep,find,ls";

/// The text of the tool result messages the model received in request `n`.
fn tool_texts(sb: &Sandbox, n: usize) -> Vec<String> {
    let req = &sb.server().requests()[n];
    req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn each_tool_round_trips_through_the_model() {
    let sb = Sandbox::with_server().await;
    let s = sb.server();
    s.push(Reply::tool_call("c1", "write", r#"{"path":"notes/a.txt","content":"alpha\nbeta\n"}"#));
    s.push(Reply::tool_call("c2", "read", r#"{"path":"notes/a.txt"}"#));
    s.push(Reply::tool_call("c3", "edit", r#"{"path":"notes/a.txt","edits":[{"oldText":"beta","newText":"gamma"}]}"#));
    s.push(Reply::tool_call("c4", "bash", r#"{"command":"cat notes/a.txt; echo done >&2"}"#));
    s.push(Reply::tool_call("c5", "grep", r#"{"pattern":"gam+a"}"#));
    s.push(Reply::tool_call("c6", "find", r#"{"pattern":"*.txt"}"#));
    s.push(Reply::tool_call("c7", "ls", r#"{"path":"notes"}"#));
    s.push(Reply::tool_call("c8", "edit", r#"{"path":"notes/a.txt","edits":[{"oldText":"zzz","newText":"y"}]}"#));
    s.push(Reply::text("all done"));
    let mut pi = sb.spawn(&["--no-session", "--tools", ALL_TOOLS]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "use the tools"})).await;
    let lines = pi.until_type("agent_settled").await;

    let file = sb.cwd.path().join("notes/a.txt");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "alpha\ngamma\n");
    assert_eq!(sb.server().request_count(), 9);
    let results: Vec<String> = (1..9).map(|n| tool_texts(&sb, n).last().cloned().unwrap_or_default()).collect();
    assert!(results[0].starts_with("Successfully wrote"), "{}", results[0]);
    assert!(results[1].contains("alpha\nbeta"), "{}", results[1]);
    assert!(results[2].contains("Successfully replaced"), "{}", results[2]);
    assert!(results[3].contains("gamma") && results[3].contains("done"), "{}", results[3]);
    assert!(results[4].contains("a.txt") && results[4].contains("gamma"), "{}", results[4]);
    assert!(results[5].contains("notes/a.txt"), "{}", results[5]);
    assert!(results[6].contains("a.txt"), "{}", results[6]);
    assert!(results[7].contains("Could not find"), "{}", results[7]);

    let ends: Vec<&Value> = lines.iter().filter(|v| v["type"] == "tool_execution_end").collect();
    assert_eq!(ends.len(), 8);
    assert_eq!(ends[7]["isError"], true);
    assert_eq!(ends[7]["result"]["details"], json!({}), "errors carry empty details");
    let edit_end = ends.iter().find(|e| e["toolCallId"] == "c3").unwrap();
    assert!(edit_end["result"]["details"]["diff"].as_str().unwrap().contains("+2 gamma"), "{edit_end}");
    // A tool result message follows each tool's end, then turn_end.
    let starts: Vec<&Value> = lines.iter().filter(|v| v["type"] == "tool_execution_start").collect();
    assert_eq!(starts[0]["args"], json!({"path": "notes/a.txt", "content": "alpha\nbeta\n"}));
    let bash_updates = lines.iter().filter(|v| v["type"] == "tool_execution_update" && v["toolCallId"] == "c4").count();
    assert!(bash_updates >= 1, "bash streams partial output");
    let tr = lines.iter().find(|v| v["type"] == "message_end" && v["message"]["role"] == "toolResult").unwrap();
    assert_eq!(tr["message"]["toolCallId"], "c1");
    assert_eq!(tr["message"]["toolName"], "write");
    assert_eq!(tr["message"]["isError"], false);
}

#[tokio::test]
async fn parallel_tool_calls_run_concurrently_and_report_in_call_order() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::tool_calls([
        FakeToolCall::new("slow", "bash", r#"{"command":"sleep 0.6; echo slow"}"#).pieces(3),
        FakeToolCall::new("fast", "bash", r#"{"command":"echo fast"}"#).pieces(2),
        FakeToolCall::new("bad", "nonexistent_tool", "{}"),
    ]));
    sb.server().push(Reply::text("ok"));
    let mut pi = sb.spawn(&["--no-session"]);
    let started = std::time::Instant::now();
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let tool_events: Vec<(String, String)> = lines
        .iter()
        .filter(|v| v["type"].as_str().unwrap().starts_with("tool_execution_") && v["type"] != "tool_execution_update")
        .map(|v| (v["type"].as_str().unwrap().to_string(), v["toolCallId"].as_str().unwrap().to_string()))
        .collect();
    let pos = |t: &str, id: &str| tool_events.iter().position(|(a, b)| a == t && b == id).unwrap();
    assert!(pos("tool_execution_start", "slow") < pos("tool_execution_start", "fast"));
    assert!(pos("tool_execution_end", "bad") < pos("tool_execution_start", "bad") + 2, "unknown tool ends at once");
    assert!(
        pos("tool_execution_end", "fast") < pos("tool_execution_end", "slow"),
        "fast finishes first: {tool_events:?}"
    );
    let result_order: Vec<&str> = lines
        .iter()
        .filter(|v| v["type"] == "message_end" && v["message"]["role"] == "toolResult")
        .map(|v| v["message"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(result_order, ["slow", "fast", "bad"]);
    let last_end = lines.iter().rposition(|v| v["type"] == "tool_execution_end").unwrap();
    let first_result =
        lines.iter().position(|v| v["type"] == "message_start" && v["message"]["role"] == "toolResult").unwrap();
    assert!(first_result > last_end, "result messages come after every tool ended");
    let bad = lines.iter().find(|v| v["type"] == "tool_execution_end" && v["toolCallId"] == "bad").unwrap();
    assert_eq!(bad["result"]["content"][0]["text"], "Tool nonexistent_tool not found");
    let texts = tool_texts(&sb, 1);
    assert_eq!(texts.len(), 3);
    assert!(texts[0].contains("slow") && texts[1].contains("fast"));
}

#[tokio::test]
async fn abort_during_a_tool_kills_it_and_ends_the_run() {
    let sb = Sandbox::with_server().await;
    let marker = sb.cwd.path().join("still-running");
    let cmd = format!("sleep 30; touch {}", marker.display());
    sb.server().push(Reply::tool_call("t1", "bash", &json!({"command": cmd}).to_string()));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until_type("tool_execution_start").await;
    pi.send(json!({"id": "a", "type": "abort"})).await;
    let rest = pi.until(|v| v["id"] == "a").await;
    let t: Vec<String> = types(&rest).into_iter().filter(|t| t != "tool_execution_update").collect();
    assert_eq!(
        t,
        [
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled",
            "response"
        ],
        "{rest:#?}"
    );
    let end = rest.iter().find(|v| v["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], true);
    let synthetic = &rest.iter().filter(|v| v["type"] == "message_end").nth(1).unwrap()["message"];
    assert_eq!(synthetic["stopReason"], "aborted");
    assert_eq!(synthetic["content"], json!([]));
    assert_eq!(sb.server().request_count(), 1, "no model call after the abort");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!marker.exists());
}

#[tokio::test]
async fn rpc_bash_streams_its_output_and_abort_bash_cancels_it() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("seen"));
    let mut pi = sb.spawn(&["--no-session"]);
    let r = pi.call("b1", json!({"type": "bash", "command": "echo hello; echo err 1>&2; exit 3"})).await;
    assert_eq!(r["data"]["exitCode"], 3);
    assert_eq!(r["data"]["cancelled"], false);
    assert_eq!(r["data"]["truncated"], false);
    let out = r["data"]["output"].as_str().unwrap();
    assert!(out.contains("hello\n") && out.contains("err\n"), "{out}");

    pi.send(json!({"id": "b2", "type": "bash", "command": "echo started; sleep 30"})).await;
    let update = pi.until_type("bash_execution_update").await.pop().unwrap();
    assert_eq!(update, json!({"type": "bash_execution_update", "id": "b2", "delta": "started\n"}));
    let r = pi.call("ab", json!({"type": "abort_bash"})).await;
    assert_eq!(r["success"], true);
    let r = pi.response("b2").await;
    assert_eq!(r["data"]["cancelled"], true);
    assert!(r["data"].get("exitCode").is_none(), "{r}");

    // The executions reach the model as user text with the next prompt.
    pi.send(json!({"id": "p", "type": "prompt", "message": "what happened?"})).await;
    pi.until_type("agent_settled").await;
    let body = &sb.server().requests()[0].body;
    let all = body["messages"].to_string();
    assert!(all.contains("Ran `echo hello; echo err 1>&2; exit 3`"), "{all}");
    assert!(all.contains("Command exited with code 3"));
    let m = pi.call("m", json!({"type": "get_messages"})).await;
    let roles: Vec<_> = m["data"]["messages"].as_array().unwrap().iter().map(|m| m["role"].clone()).collect();
    // The run's system message comes after the executions made before it.
    assert_eq!(
        roles,
        [json!("bashExecution"), json!("bashExecution"), json!("system"), json!("user"), json!("assistant")]
    );
}
