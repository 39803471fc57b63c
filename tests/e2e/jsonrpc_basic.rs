//! JSON-RPC dialect: selection, initialize, prompt notifications, the error
//! table and JSON-RPC 2.0 conformance.

use pi_compat::fake_server::Reply;
use serde_json::{Value, json};

use crate::harness::{Pi, Sandbox};

fn req(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Read until the response with this raw id text; returns it.
async fn response(pi: &mut Pi, id: &Value) -> Value {
    let lines = pi.until(|v| v.get("method").is_none() && &v["id"] == id).await;
    lines.into_iter().last().unwrap_or(Value::Null)
}

#[tokio::test]
async fn initialize_then_prompt_streams_notifications_until_turn_end() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["Hel", "lo"]).usage(10, 5, 0));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(req(json!(1), "initialize", json!({"cwd": ".", "model": "fake-model", "thinkingLevel": "off"}))).await;
    let first = pi.next().await;
    assert_eq!(first["id"], 1, "the response comes first: {first}");
    assert_eq!(first["result"]["model"], "fake-model");
    assert_eq!(first["result"]["provider"], "fake");
    assert!(first["result"]["sessionId"].as_str().is_some());
    assert_eq!(first["result"]["sessionPath"], Value::Null, "--no-session");
    let second = pi.next().await;
    assert_eq!(second["method"], "initialized");
    assert_eq!(second["params"]["sessionId"], first["result"]["sessionId"]);
    assert!(second.get("id").is_none());

    pi.send(req(json!(2), "prompt", json!({"content": "Say hello"}))).await;
    let lines = pi.until(|v| v["method"] == "turnEnd").await;
    assert_eq!(lines[0], json!({"jsonrpc": "2.0", "id": 2, "result": {"accepted": true, "disposition": "started"}}));
    let deltas: Vec<_> = lines
        .iter()
        .filter(|v| v["method"] == "assistantMessage" && v["params"]["type"] == "delta")
        .map(|v| v["params"]["delta"].clone())
        .collect();
    assert_eq!(deltas, [json!("Hel"), json!("lo")]);
    let complete = lines.iter().find(|v| v["params"]["type"] == "complete").unwrap();
    assert_eq!(complete["params"]["content"], "Hello");
    assert_eq!(complete["params"]["usage"], json!({"inputTokens": 10, "outputTokens": 5}));
    assert!(lines.iter().any(|v| v["method"] == "contextUsage" && v["params"]["total"] == 128000));
    let end = lines.last().unwrap();
    assert_eq!(end["params"]["totalTokens"], 15);
    assert!(end["params"]["totalCost"].as_f64().unwrap() > 0.0);

    pi.send(req(json!(3), "getStatus", json!({}))).await;
    let status = response(&mut pi, &json!(3)).await["result"].clone();
    assert_eq!(status["idle"], true);
    assert_eq!(status["model"], "fake-model");
    assert_eq!(status["activeTools"], json!(["read", "bash", "edit", "write"]));
    let usage = status["contextUsage"].as_f64().unwrap();
    assert!((usage - 15.0 / 128000.0).abs() < 1e-9, "{usage}");
}

#[tokio::test]
async fn set_model_answers_then_announces_model_changed() {
    let sb = Sandbox::with_server().await;
    let mut pi = sb.spawn(&["--no-session", "--protocol", "jsonrpc"]);
    pi.send(req(json!("m"), "setModel", json!({"model": "fake/fake-other"}))).await;
    let r = pi.next().await;
    assert_eq!(r["id"], "m");
    assert_eq!(r["result"]["id"], "fake-other");
    let n = pi.next().await;
    assert_eq!(n["method"], "modelChanged");
    assert_eq!(n["params"]["model"], "fake-other");
    pi.send(req(json!("m2"), "setModel", json!({"model": "nope"}))).await;
    let r = response(&mut pi, &json!("m2")).await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["field"], "modelId");
}

#[tokio::test]
async fn the_error_table_and_conformance_cases() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session", "--protocol", "jsonrpc"]);

    // Parse error: id null, session goes on.
    pi.send_raw("{not json\n").await;
    let v = pi.next().await;
    assert_eq!(v["error"]["code"], -32700);
    assert_eq!(v["id"], Value::Null);
    // Blank lines are ignored.
    pi.send_raw("\n\r\n").await;
    // Not an object.
    pi.send_raw("42\n").await;
    assert_eq!(pi.next().await["error"]["code"], -32600);
    // jsonrpc missing / wrong.
    pi.send(json!({"id": 5, "method": "getState"})).await;
    let v = pi.next().await;
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(5), json!(-32600)));
    pi.send(json!({"jsonrpc": "1.0", "id": 6, "method": "getState"})).await;
    assert_eq!(pi.next().await["error"]["code"], -32600);
    // Unknown method, reserved names.
    pi.send(req(json!(7), "noSuchMethod", json!({}))).await;
    let v = pi.next().await;
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(7), json!(-32601)));
    pi.send(req(json!(8), "rpc.discover", json!({}))).await;
    assert_eq!(pi.next().await["error"]["code"], -32601);
    // Invalid params name the field.
    pi.send(req(json!(9), "prompt", json!({}))).await;
    let v = pi.next().await;
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(v["error"]["message"], "Invalid params: 'content' is required");
    assert_eq!(v["error"]["data"]["field"], "content");
    pi.send(req(json!(10), "setThinkingLevel", json!({"level": "bogus"}))).await;
    assert_eq!(pi.next().await["error"]["data"]["field"], "level");
    // Scalar params are invalid requests.
    pi.send(json!({"jsonrpc": "2.0", "id": 11, "method": "getState", "params": "bar"})).await;
    assert_eq!(pi.next().await["error"]["code"], -32600);
    // Bad id types: -32600 with id null.
    pi.send(json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "getState"})).await;
    let v = pi.next().await;
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (Value::Null, json!(-32600)));

    // Ids of every type are echoed byte for byte; "id": null is a request.
    for raw in ["-1", "1.5", "18446744073709551616", "\"\"", "0", "null", "\"x y\""] {
        pi.send_raw(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw},\"method\":\"getState\"}}\n")).await;
        let line = pi.next_line().await.unwrap();
        assert!(line.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw},\"result\":")), "{raw}: {line}");
    }

    // Notifications: no answer, unknown ones ignored, $/cancelRequest too.
    pi.send(json!({"jsonrpc": "2.0", "method": "noSuchNotification", "params": {}})).await;
    pi.send(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}})).await;
    pi.send(json!({"jsonrpc": "2.0", "method": "setSteeringMode", "params": {"mode": "all"}})).await;
    // A response object from the client is never answered.
    pi.send(json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}})).await;
    pi.send(req(json!("after"), "getState", json!({}))).await;
    let v = pi.next().await;
    assert_eq!(v["id"], "after", "nothing was written for the notifications: {v}");
    assert_eq!(v["result"]["steeringMode"], "all", "the notification ran");

    // Batches.
    pi.send_raw("[]\n").await;
    let v = pi.next().await;
    assert!(v.is_object(), "an empty batch gets a single error: {v}");
    assert_eq!(v["error"]["code"], -32600);
    pi.send_raw("[1,2]\n").await;
    let v = pi.next().await;
    assert_eq!(v.as_array().map(|a| a.len()), Some(2));
    pi.send_raw(
        "[{\"jsonrpc\":\"2.0\",\"id\":\"b1\",\"method\":\"getState\"},{\"jsonrpc\":\"2.0\",\"method\":\"abort\"},{\"jsonrpc\":\"2.0\",\"id\":\"b2\",\"method\":\"nope\"},{\"foo\":1}]\n",
    )
    .await;
    let v = pi.next().await;
    let arr = v.as_array().unwrap_or_else(|| panic!("batch answer is an array: {v}"));
    assert_eq!(arr.len(), 3);
    let ids: Vec<Value> = arr.iter().map(|r| r["id"].clone()).collect();
    assert!(ids.contains(&json!("b1")) && ids.contains(&json!("b2")) && ids.contains(&Value::Null), "{v}");
    pi.send_raw("[{\"jsonrpc\":\"2.0\",\"method\":\"abort\"},{\"jsonrpc\":\"2.0\",\"method\":\"abort\"}]\n").await;
    pi.send(req(json!("last"), "getState", json!({}))).await;
    assert_eq!(pi.next().await["id"], "last", "an all-notification batch writes nothing");
}

#[tokio::test]
async fn shutdown_answers_and_exits_zero() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(req(json!(1), "shutdown", json!({}))).await;
    let v = pi.next().await;
    assert_eq!(v, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert!(pi.drain().await.is_empty());
    assert!(pi.wait().await.success());
}

#[tokio::test]
async fn duplicate_ids_in_flight_are_rejected() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::text_chunks(["a", "b", "c"]).delay_ms(600));
    let mut pi = sb.spawn(&["--no-session"]);
    pi.send(req(json!(1), "prompt", json!({"content": "x"}))).await;
    pi.send(req(json!(2), "abort", json!({}))).await;
    pi.send(req(json!(2), "getState", json!({}))).await;
    let lines = pi.until(|v| v["method"] == "turnEnd").await;
    let dup = lines.iter().find(|v| v["id"] == 2 && v.get("error").is_some()).expect("duplicate rejected");
    assert_eq!(dup["error"]["code"], -32600);
    assert!(dup["error"]["message"].as_str().unwrap().contains("duplicate"));
}

#[tokio::test]
async fn content_length_framing_is_detected_and_used_both_ways() {
    let sb = Sandbox::offline();
    let mut pi = sb.spawn(&["--no-session"]);
    let body = req(json!(1), "getState", json!({})).to_string();
    pi.send_raw(&format!("Content-Length: {}\r\n\r\n{}", body.len(), body)).await;
    let header = pi.next_line().await.unwrap();
    let len: usize = header.trim_end_matches('\r').strip_prefix("Content-Length: ").unwrap().parse().unwrap();
    let blank = pi.next_line().await.unwrap();
    assert_eq!(blank, "\r");
    // The body has no trailing newline: the next header follows it directly.
    let body2 = req(json!(2), "getState", json!({})).to_string();
    pi.send_raw(&format!("Content-Length: {}\r\n\r\n{}", body2.len(), body2)).await;
    let rest = pi.next_line().await.unwrap();
    let first: Value = serde_json::from_str(&rest[..len]).unwrap();
    assert_eq!(first["id"], 1);
    assert!(rest[len..].starts_with("Content-Length: "));
}
