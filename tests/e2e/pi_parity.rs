//! Behaviour the seed leaves open, matched to pi 1.6.0 (each found by driving
//! both programs with the same script): the model and thinking level chosen
//! afresh for each session, one `queue_update` per delivered message in `all`
//! mode, an empty session's context usage, and the JSON-RPC error `data`.

use pi_compat::fake_server::Reply;
use serde_json::json;

use crate::harness::Sandbox;

async fn reasoning_sandbox() -> Sandbox {
    let sb = Sandbox::with_server().await;
    sb.write_models(&sb.server().base_url(), json!({"reasoning": true}));
    sb
}

#[tokio::test]
async fn new_and_switched_sessions_start_from_the_defaults_not_the_previous_level() {
    let sb = reasoning_sandbox().await;
    sb.server().push(Reply::text("noted"));
    let mut pi = sb.spawn(&[]);
    pi.call("t", json!({"type": "set_thinking_level", "level": "low"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "remember low"})).await;
    pi.until_type("agent_settled").await;
    let first = pi.call("s", json!({"type": "get_state"})).await["data"]["sessionFile"].clone();

    pi.call("n", json!({"type": "new_session"})).await;
    let state = pi.call("s2", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!(state["thinkingLevel"], "medium", "a new session starts at pi's default level");
    pi.call("t2", json!({"type": "set_thinking_level", "level": "high"})).await;
    pi.call("m", json!({"type": "set_model", "provider": "fake", "modelId": "fake-other"})).await;
    pi.call("n2", json!({"type": "new_session"})).await;
    let state = pi.call("s3", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!(state["thinkingLevel"], "medium", "not the previous level");
    assert_eq!(state["model"]["id"], "fake-model", "and the default model, not the previous one");

    pi.call("t3", json!({"type": "set_thinking_level", "level": "high"})).await;
    pi.call("sw", json!({"type": "switch_session", "sessionPath": first})).await;
    let state = pi.call("s4", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!(state["thinkingLevel"], "low", "a switched-to session gets its recorded level");
}

#[tokio::test]
async fn the_command_line_level_wins_for_every_session() {
    let sb = reasoning_sandbox().await;
    let mut pi = sb.spawn(&["--no-session", "--model", "fake/fake-model:high"]);
    pi.call("t", json!({"type": "set_thinking_level", "level": "minimal"})).await;
    pi.call("n", json!({"type": "new_session"})).await;
    let state = pi.call("s", json!({"type": "get_state"})).await["data"].clone();
    assert_eq!(state["thinkingLevel"], "high");
}

#[tokio::test]
async fn all_mode_sends_one_queue_update_per_delivered_message() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["one ", "two ", "three"]).delay_ms(150));
    sb.server().push(Reply::text("after follow-ups"));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.call("m", json!({"type": "set_follow_up_mode", "mode": "all"})).await;
    pi.send(json!({"id": "p", "type": "prompt", "message": "start"})).await;
    pi.until(|v| v["type"] == "message_update").await;
    pi.call("f1", json!({"type": "follow_up", "message": "F1"})).await;
    pi.call("f2", json!({"type": "follow_up", "message": "F2"})).await;
    let rest = pi.until_type("agent_settled").await;
    let drain: Vec<&serde_json::Value> = rest
        .iter()
        .skip_while(|v| v["type"] != "turn_end")
        .filter(|v| v["type"] == "queue_update" || (v["type"] == "message_start" && v["message"]["role"] == "user"))
        .collect();
    let shown: Vec<serde_json::Value> = drain
        .iter()
        .map(|v| {
            if v["type"] == "queue_update" { v["followUp"].clone() } else { v["message"]["content"][0]["text"].clone() }
        })
        .collect();
    assert_eq!(shown, [json!(["F2"]), json!("F1"), json!([]), json!("F2")], "2 -> 1 -> 0 as they are delivered");
}

#[tokio::test]
async fn an_empty_session_uses_no_context_yet() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text("hello"));
    let mut pi = sb.spawn(&["--no-session"]);
    let usage = pi.call("a", json!({"type": "get_session_stats"})).await["data"]["contextUsage"].clone();
    assert_eq!(usage, json!({"tokens": 0, "contextWindow": 128000, "percent": 0.0}));
    pi.send(json!({"id": "p", "type": "prompt", "message": "hi"})).await;
    pi.until_type("agent_settled").await;
    let usage = pi.call("b", json!({"type": "get_session_stats"})).await["data"]["contextUsage"].clone();
    assert!(usage["tokens"].as_u64().unwrap() > 0, "{usage}");
}

#[tokio::test]
async fn json_rpc_errors_always_carry_kind_and_retryable() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(json!({"jsonrpc": "2.0", "id": 1, "method": "noSuchMethod"})).await;
    let v = pi.next().await;
    assert_eq!(v["error"]["data"], json!({"method": "noSuchMethod", "kind": "unsupported", "retryable": false}));
    pi.send_raw("{not json\n").await;
    let v = pi.next().await;
    assert_eq!((v["error"]["code"].clone(), v["error"]["data"]["retryable"].clone()), (json!(-32700), json!(false)));
    assert_eq!(v["error"]["data"]["kind"], "parse_error");
}
