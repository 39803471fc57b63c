//! Seed 004's `toolResult (if needed)`: a JSON-RPC client declares a tool
//! in `initialize` (`clientTools`), gets its `toolCall` notification, runs it
//! itself and answers with a `toolResult` request; the model sees the
//! result. Driven by a real JSON-RPC client library (jsonrpsee).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use jsonrpsee::core::client::{ClientT, SubscriptionClientT};
use jsonrpsee::core::params::ObjectParams;
use jsonrpsee::rpc_params;
use pi_compat::fake_server::Reply;
use serde_json::{Value, json};
use tokio::io::BufReader;

use crate::clients::{StdinSender, StdoutReceiver, client_command};
use crate::harness::Sandbox;

fn object(value: Value) -> ObjectParams {
    let mut params = ObjectParams::new();
    if let Value::Object(map) = value {
        for (k, v) in map {
            params.insert(&k, v).expect("params");
        }
    }
    params
}

#[tokio::test]
async fn a_jsonrpc_client_runs_its_own_tool_and_the_model_sees_the_result() {
    let sb = Sandbox::with_server().await;
    sb.server().push(Reply::tool_call("call_w", "weather", r#"{"city":"Paris"}"#));
    sb.server().push(Reply::tool_call("call_x", "weather", r#"{"city":"Nowhere"}"#));
    sb.server().push(Reply::text("Sunny in Paris."));
    let mut cmd = client_command(&sb, Path::new(env!("CARGO_BIN_EXE_pi")));
    cmd.args(["--mode", "rpc", "--no-session"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn pi");
    let sender = StdinSender(child.stdin.take().expect("stdin"));
    let receiver = StdoutReceiver(BufReader::new(child.stdout.take().expect("stdout")));
    let client = jsonrpsee::core::client::ClientBuilder::default().build_with_tokio(sender, receiver);

    let mut tool_calls = client.subscribe_to_method::<Value>("toolCall").await.expect("subscribe");
    let mut turn_end = client.subscribe_to_method::<Value>("turnEnd").await.expect("subscribe");
    let weather = json!({
        "name": "weather",
        "description": "The weather in a city (run by the client)",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    });
    let _: Value = client.request("initialize", object(json!({"clientTools": [weather]}))).await.expect("initialize");
    let accepted: Value = client.request("prompt", object(json!({"content": "weather?"}))).await.expect("prompt");
    assert_eq!(accepted["accepted"], true);

    // Both calls: the first answered with a result, the second with an error.
    for (expected_city, result) in [
        ("Paris", json!({"output": {"content": [{"type": "text", "text": "22°C and sunny"}]}})),
        ("Nowhere", json!({"output": {"content": [{"type": "text", "text": "no such city"}]}, "isError": true})),
    ] {
        let call =
            tokio::time::timeout(Duration::from_secs(20), tool_calls.next()).await.expect("toolCall").unwrap().unwrap();
        assert_eq!((call["toolName"].as_str(), call["input"]["city"].as_str()), (Some("weather"), Some(expected_city)));
        let mut answer = result;
        answer["toolCallId"] = call["toolCallId"].clone();
        let ack: Value = client.request("toolResult", object(answer)).await.expect("toolResult");
        assert_eq!(ack, json!({}));
    }
    tokio::time::timeout(Duration::from_secs(20), turn_end.next()).await.expect("turnEnd").unwrap().unwrap();

    // An answer to no call is refused, and the connection goes on.
    let stale = object(json!({"toolCallId": "call_w", "output": {"content": []}}));
    let err = client.request::<Value, _>("toolResult", stale).await.unwrap_err();
    assert!(err.to_string().contains("call_w"), "{err}");

    let requests = sb.server().requests();
    assert_eq!(requests.len(), 3);
    let tools = requests[0].body["tools"].to_string();
    assert!(
        tools.contains("\"weather\"") && tools.contains("run by the client"),
        "the model is offered the tool: {tools}"
    );
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("22°C and sunny"), "the model saw the client's result: {second}");
    let third = requests[2].body["messages"].to_string();
    assert!(third.contains("no such city"), "{third}");
    let _: Value = client.request("shutdown", rpc_params![]).await.expect("shutdown");
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exit").expect("wait");
    assert!(status.success());
}
