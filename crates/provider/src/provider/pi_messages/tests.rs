//! Tests of `pi-messages`: the request (body, headers), the event decoding
//! against the fake server's rendering of pi's protocol, the checks on
//! content indexes, the terminal events and the error texts.

use pi_fake_server::{FakeServer, FakeToolCall, Reply};
use serde_json::{Value, json};

use super::*;
use crate::message::{BashExecutionMessage, SystemMessage, UserContent};
use crate::model::{Model, ModelCost};
use crate::provider::driver::decode_bytes;
use crate::provider::test_support::{collect, deltas, last_usage, simple_request};

fn provider() -> PiMessages {
    PiMessages::new(HttpClient::new().unwrap())
}

fn model(base_url: &str) -> Model {
    Model {
        id: "balanced".into(),
        name: "Balanced".into(),
        api: "pi-messages".into(),
        provider: "radius".into(),
        base_url: base_url.into(),
        reasoning: true,
        input: vec!["text".into()],
        context_window: 131_072,
        max_tokens: 32_768,
        cost: ModelCost::default(),
        headers: None,
        thinking_level_map: None,
        sampling_params: None,
        sampling_params_by_thinking_level: None,
        compat: None,
        extra: Default::default(),
    }
}

fn system() -> AgentMessage {
    AgentMessage::System(SystemMessage {
        content: UserContent::Text(String::new()),
        sections: Some(serde_json::from_value(json!({"preamble": "You are terse."})).unwrap()),
        timestamp: 1,
        tools_added: None,
        tools_removed: None,
        extra: Default::default(),
    })
}

#[tokio::test]
async fn the_request_carries_pi_messages_and_options() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text("ok"));
    let mut request = simple_request(model(&format!("{}/v1/", server.url())), "hi");
    request.messages.insert(0, system());
    request.messages.push(AgentMessage::BashExecution(
        serde_json::from_value::<BashExecutionMessage>(json!({"command": "ls", "output": "a\n", "exitCode": 0,
            "cancelled": false, "truncated": false, "timestamp": 3}))
        .unwrap(),
    ));
    request.thinking_level = ThinkingLevel::High;
    request.session_id = Some("session-1".into());
    request.headers.insert("x-team".into(), "blue".into());
    let (events, err) = collect(&provider(), request, CancellationToken::new()).await;
    assert_eq!(err, None, "{events:?}");
    let recorded = &server.requests()[0];
    assert_eq!(recorded.method, "POST");
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(recorded.header("accept"), Some("text/event-stream"));
    assert_eq!(recorded.header("x-team"), Some("blue"));
    let body = &recorded.body;
    assert_eq!(body["model"], "balanced");
    assert_eq!(body["options"], json!({"reasoning": "high", "sessionId": "session-1"}));
    let messages = body["context"]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "user"]);
    assert_eq!(messages[0]["sections"], json!({"preamble": "You are terse."}));
    assert_eq!(messages[1]["content"], json!([{"type": "text", "text": "hi"}]));
    let bash = messages[2]["content"].to_string();
    assert!(bash.contains("ls") && bash.contains("a\\n"), "{bash}");
    assert_eq!(deltas(&events, 0), ["ok"]);
}

#[tokio::test]
async fn text_thinking_and_tool_calls_are_decoded() {
    let server = FakeServer::start().await.unwrap();
    let reply = Reply::text("Hi there")
        .with_thinking("hmm")
        .with_tool_call(FakeToolCall::new("call_1", "bash", r#"{"command":"ls"}"#))
        .usage(10, 5, 3);
    server.push(reply);
    let (events, err) =
        collect(&provider(), simple_request(model(&server.url()), "hi"), CancellationToken::new()).await;
    assert_eq!(err, None, "{events:?}");
    assert!(events.contains(&ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking }));
    assert!(events.contains(&ProviderEvent::Signature { index: 0, signature: "sig-0".into() }));
    assert!(events.contains(&ProviderEvent::BlockStart { index: 1, kind: BlockKind::Text }));
    let tool = BlockKind::ToolCall { id: "call_1".into(), name: "bash".into() };
    assert!(events.contains(&ProviderEvent::BlockStart { index: 2, kind: tool }));
    assert_eq!(deltas(&events, 1).concat(), "Hi there");
    assert_eq!(deltas(&events, 2).concat(), r#"{"command":"ls"}"#);
    let usage = last_usage(&events);
    assert_eq!((usage.input, usage.output, usage.cache_read, usage.total_tokens), (7, 5, 3, 15));
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("toolUse".into()) }));
}

fn decode(lines: &[Value]) -> (Vec<ProviderEvent>, Option<ProviderError>) {
    let body: String = lines.iter().map(|v| format!("data: {v}\n\n")).collect();
    decode_bytes(Decoder::new("radius"), body.as_bytes(), 7)
}

#[test]
fn whole_tool_arguments_and_response_fields() {
    let (events, err) = decode(&[
        json!({"type": "start"}),
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "read"}),
        json!({"type": "toolcall_end", "contentIndex": 0,
            "toolCall": {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}}),
        json!({"type": "done", "reason": "toolUse", "responseId": "r1", "responseModel": "kimi",
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3}}),
    ]);
    assert_eq!(err, None);
    assert_eq!(deltas(&events, 0), [r#"{"path":"a"}"#]);
    assert!(events.contains(&ProviderEvent::ResponseId("r1".into())));
    assert!(
        events.contains(&ProviderEvent::MessageField { key: "responseModel".into(), value: Box::new(json!("kimi")) })
    );
}

#[test]
fn bad_indexes_error_events_and_missing_ends_fail() {
    let (_, err) = decode(&[json!({"type": "text_start", "contentIndex": 1})]);
    assert_eq!(err.unwrap().message, "Invalid contentIndex 1 in pi-messages text_start event");
    let (_, err) = decode(&[json!({"type": "text_delta", "contentIndex": "__proto__", "delta": "x"})]);
    assert_eq!(err.unwrap().message, "Invalid contentIndex \"__proto__\" in pi-messages text_delta event");
    let (_, err) = decode(&[json!({"type": "start"}), json!({"type": "text_start", "contentIndex": 0})]);
    assert_eq!(err.unwrap().message, "radius stream ended without a terminal event");
    let (events, err) = decode(&[json!({"type": "error", "reason": "error", "errorMessage": "overloaded",
        "usage": {"input": 4, "output": 0}})]);
    let err = err.unwrap();
    assert_eq!(err.message, "overloaded");
    assert_eq!(last_usage(&events).input, 4);
}

#[tokio::test]
async fn http_errors_are_worded_like_pi() {
    assert_eq!(
        http_error_message(429, r#"{"error":{"message":"slow down","code":"rate_limited"}}"#),
        "429 Too Many Requests: slow down (rate_limited)"
    );
    assert_eq!(http_error_message(500, "boom"), "500 Internal Server Error: boom");
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::error(401, r#"{"error":{"message":"bad key"}}"#));
    let (_, err) = collect(&provider(), simple_request(model(&server.url()), "hi"), CancellationToken::new()).await;
    let err = err.unwrap();
    assert_eq!(err.message, "401 Unauthorized: bad key");
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    let mut request = simple_request(model(&server.url()), "hi");
    request.api_key = None;
    let (_, err) = collect(&provider(), request, CancellationToken::new()).await;
    assert_eq!(err.unwrap().message, "No API key provided for provider \"radius\"");
}
