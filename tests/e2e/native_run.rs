//! Native dialect: commands during a run — steering, follow-ups, prompts while
//! streaming, abort — and auto-retry.

use pi_compat::fake_server::Reply;
use serde_json::json;

use crate::harness::{Sandbox, types};

fn slow(text: &[&str]) -> Reply {
    Reply::text_chunks(text.iter().copied()).delay_ms(150)
}

#[tokio::test]
async fn steer_and_follow_up_during_a_run_stay_in_the_same_run() {
    let sb = Sandbox::with_server().await;
    let server = sb.server();
    server.push(slow(&["one ", "two ", "three"]));
    server.push(Reply::text("after steer"));
    server.push(Reply::text("after follow-up"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "start"})).await;
    pi.until(|v| v["type"] == "message_update").await;

    pi.send(json!({"id": "s", "type": "steer", "message": "S1"})).await;
    let before = pi.until(|v| v["id"] == "s").await;
    let n = before.len();
    assert_eq!(before[n - 2], json!({"type": "queue_update", "steering": ["S1"], "followUp": []}));
    assert_eq!(before[n - 1]["success"], true);
    pi.send(json!({"id": "f", "type": "follow_up", "message": "F1"})).await;
    let before = pi.until(|v| v["id"] == "f").await;
    assert_eq!(before[before.len() - 2], json!({"type": "queue_update", "steering": ["S1"], "followUp": ["F1"]}));

    let rest = pi.until_type("agent_settled").await;
    assert_eq!(rest.iter().filter(|v| v["type"] == "agent_start").count(), 0, "one run only");
    assert_eq!(rest.iter().filter(|v| v["type"] == "agent_end").count(), 1);
    // Steering comes right after the first turn: turn_end, turn_start, queue_update, user S1.
    let i =
        rest.iter().position(|v| v["type"] == "message_start" && v["message"]["content"][0]["text"] == "S1").unwrap();
    assert_eq!(types(&rest[i - 3..i]), ["turn_end", "turn_start", "queue_update"]);
    assert_eq!(rest[i - 1], json!({"type": "queue_update", "steering": [], "followUp": ["F1"]}));
    let j =
        rest.iter().position(|v| v["type"] == "message_start" && v["message"]["content"][0]["text"] == "F1").unwrap();
    assert!(j > i);
    assert_eq!(rest[j - 1], json!({"type": "queue_update", "steering": [], "followUp": []}));
    let end = rest.iter().find(|v| v["type"] == "agent_end").unwrap();
    let roles: Vec<_> =
        end["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_string()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant", "user", "assistant"]);

    // The model saw the steering message after the first answer.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[1].last_message_text(), "S1");
    assert_eq!(reqs[2].last_message_text(), "F1");
}

#[tokio::test]
async fn a_prompt_while_streaming_needs_a_streaming_behavior() {
    let sb = Sandbox::with_server().await;
    sb.server().push(slow(&["a", "b", "c"]));
    sb.server().push(Reply::text("queued one answered"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "first"})).await;
    pi.until(|v| v["type"] == "message_update").await;
    let r = pi.call("p2", json!({"type": "prompt", "message": "second"})).await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("streamingBehavior"), "{r}");
    let r = pi.call("p3", json!({"type": "prompt", "message": "second", "streamingBehavior": "followUp"})).await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["disposition"], "queued");
    let rest = pi.until_type("agent_settled").await;
    assert!(
        rest.iter().any(|v| v["type"] == "message_end" && v["message"]["content"][0]["text"] == "queued one answered")
    );
}

#[tokio::test]
async fn abort_mid_stream_ends_the_run_before_its_response() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["partial ", "more ", "never"]).delay_ms(400));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until(|v| v["assistantMessageEvent"]["type"] == "text_delta").await;
    pi.send(json!({"id": "a", "type": "abort"})).await;
    let rest = pi.until(|v| v["id"] == "a").await;
    let t = types(&rest);
    let tail: Vec<&str> = t.iter().map(String::as_str).rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
    assert_eq!(tail, ["message_end", "turn_end", "agent_end", "agent_settled", "response"], "{rest:#?}");
    let end = rest.iter().find(|v| v["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["stopReason"], "aborted");
    assert_eq!(end["message"]["errorMessage"], "Request was aborted");
    assert!(end["message"]["content"][0]["text"].as_str().unwrap().starts_with("partial"));
    assert!(rest.iter().any(|v| v["assistantMessageEvent"]["type"] == "text_end"), "the open block is closed");
    assert_eq!(rest[rest.len() - 2], json!({"type": "agent_settled", "aborted": true}));
    // Idle abort answers at once.
    let r = pi.call("a2", json!({"type": "abort"})).await;
    assert_eq!(r["success"], true);
    // The aborted reply stays in the history (after the system message and the prompt).
    let m = pi.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(m["data"]["messages"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn transient_errors_are_retried_with_the_seed_events() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::openai_error(
        500,
        "The server had an error while processing your request.",
        "server_error",
    ));
    sb.server().push(Reply::text("recovered"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    let t = types(&lines);
    let first_end = t.iter().position(|x| x == "agent_end").unwrap();
    assert_eq!(lines[first_end]["willRetry"], true);
    let retry = &lines[first_end + 1];
    assert_eq!(retry["type"], "auto_retry_start");
    assert_eq!(retry["attempt"], 1);
    assert_eq!(retry["maxAttempts"], 3);
    assert_eq!(retry["delayMs"], 20);
    assert!(retry["errorMessage"].as_str().unwrap().starts_with("500"), "{retry}");
    let failed = lines.iter().find(|v| v["type"] == "message_end" && v["message"]["stopReason"] == "error").unwrap();
    assert!(failed["message"]["errorMessage"].as_str().unwrap().contains("server had an error"));
    let after: Vec<&str> = t[first_end + 2..].iter().map(String::as_str).filter(|t| *t != "message_update").collect();
    assert_eq!(
        after,
        [
            "entry_appended",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "auto_retry_end",
            "turn_end",
            "agent_end",
            "agent_settled"
        ]
    );
    let retry_end = lines.iter().find(|v| v["type"] == "auto_retry_end").unwrap();
    assert_eq!(retry_end, &json!({"type": "auto_retry_end", "success": true, "attempt": 1}));
    let m = pi.call("m", json!({"type": "get_messages"})).await;
    let roles: Vec<_> = m["data"]["messages"].as_array().unwrap().iter().map(|m| m["stopReason"].clone()).collect();
    assert_eq!(roles, [json!(null), json!(null), json!("stop")], "the failed attempt left the context");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::openai_error(400, "Invalid request: bad things", "invalid_request_error"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    assert!(!lines.iter().any(|v| v["type"] == "auto_retry_start"));
    let end = lines.iter().find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant").unwrap();
    assert_eq!(end["message"]["stopReason"], "error");
    assert!(end["message"]["errorMessage"].as_str().unwrap().starts_with("400"), "{end}");
    assert_eq!(sb.server().request_count(), 1);
}

#[tokio::test]
async fn retries_give_up_after_max_attempts() {
    let sb = Sandbox::with_server().await;
    for _ in 0..4 {
        sb.server().push(Reply::openai_error(503, "busy", "server_error"));
    }
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    let lines = pi.until_type("agent_settled").await;
    let starts: Vec<_> =
        lines.iter().filter(|v| v["type"] == "auto_retry_start").map(|v| v["delayMs"].clone()).collect();
    assert_eq!(starts, [json!(20), json!(40), json!(80)]);
    let end = lines.iter().find(|v| v["type"] == "auto_retry_end").unwrap();
    assert_eq!(end["success"], false);
    assert_eq!(end["attempt"], 3);
    assert!(end["finalError"].as_str().unwrap().starts_with("503"));
    assert_eq!(sb.server().request_count(), 4);
}

#[tokio::test]
async fn stdin_eof_finishes_the_accepted_run_then_exits_zero() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["slow ", "but ", "complete"]).delay_ms(100));
    let mut pi = sb.spawn(&[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.send(json!({"id": "s", "type": "get_state"})).await;
    pi.close_stdin();
    let lines = pi.drain().await;
    assert!(lines.iter().any(|v| v["id"] == "s"), "every command read before EOF is answered");
    assert_eq!(lines.last().unwrap()["type"], "agent_settled", "{lines:#?}");
    let end = lines.iter().find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant").unwrap();
    assert_eq!(end["message"]["content"][0]["text"], "slow but complete");
    assert!(pi.wait().await.success());
    let files = sb.session_files();
    assert_eq!(files.len(), 1);
    assert_eq!(crate::harness::read_jsonl(&files[0]).len(), 6, "header, model, thinking, system, user, assistant");
}

#[tokio::test]
async fn sigterm_aborts_the_run_flushes_and_exits() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["a", "b", "c", "d"]).delay_ms(500));
    let mut pi = sb.spawn(&[]);
    pi.send(json!({"id": "p", "type": "prompt", "message": "go"})).await;
    pi.until(|v| v["assistantMessageEvent"]["type"] == "text_delta").await;
    let pid = pi.child.id().unwrap();
    let status = std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status().unwrap();
    assert!(status.success());
    let rest = pi.drain().await;
    assert_eq!(rest.last().unwrap(), &json!({"type": "agent_settled", "aborted": true}), "{rest:#?}");
    let code = pi.wait().await.code();
    assert_eq!(code, Some(143));
    let files = sb.session_files();
    let lines = crate::harness::read_jsonl(&files[0]);
    assert_eq!(lines.last().unwrap()["message"]["stopReason"], "aborted", "the aborted reply was flushed");
}
