//! Tests of `mistral-conversations`: request bodies against pi 1.6.0's
//! captured requests, chunk decoding (thinking chunks, text, tool calls,
//! usage), faults, and the reasoning fields per level.

use pi_fake_server::{FakeServer, Reply};
use serde_json::{Value, json};

use super::*;
use crate::model::{Model, ModelCost, ThinkingLevel};
use crate::provider::driver::decode_bytes;
use crate::provider::mistral_request::{derive_tool_call_id, reasoning_fields};
use crate::provider::test_support::{collect, deltas, fixture, keys, last_usage, simple_request};
use crate::provider::{ProviderErrorKind, ProviderEvent};

fn provider() -> MistralConversations {
    MistralConversations::new(HttpClient::new().unwrap())
}

fn model(base_url: &str) -> Model {
    Model {
        id: "mistral-test".into(),
        name: "Mistral Test".into(),
        api: "mistral-conversations".into(),
        provider: "mistral".into(),
        base_url: base_url.into(),
        reasoning: false,
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

#[tokio::test]
async fn requests_match_pi_captures() {
    for name in ["mistral_medium", "mistral_magistral_high"] {
        let server = FakeServer::start().await.unwrap();
        let f = fixture(name, &server.url());
        server.push(Reply::text("ok"));
        let (_, err) = collect(&provider(), f.request, CancellationToken::new()).await;
        assert_eq!(err, None, "{name}");
        let recorded = &server.requests()[0];
        assert_eq!(recorded.path, f.url, "{name}");
        assert_eq!(recorded.body, f.body, "{name}: body");
        assert_eq!(keys(&recorded.body), keys(&f.body), "{name}: key order");
        for (header, value) in &f.headers {
            assert_eq!(recorded.header(header), value.as_str(), "{name}: header {header}");
        }
        assert_eq!(recorded.header("x-affinity"), Some("session-1"));
    }
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

#[test]
fn chunks_decode_like_pi() {
    let chunk = |delta: Value, finish: Value| {
        data(json!({"id": "cmpl-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    };
    let bytes = [
        chunk(json!({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me"}]}]}), Value::Null),
        chunk(json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": " see."}]}]}), Value::Null),
        chunk(json!({"content": ""}), Value::Null),
        chunk(json!({"content": "Hello"}), Value::Null),
        chunk(json!({"content": [{"type": "text", "text": " there"}]}), Value::Null),
        chunk(json!({"tool_calls": [{"id": "abcDEF123", "index": 0, "function": {"name": "bash", "arguments": "{\"command\":"}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"id": "null", "index": 1, "function": {"name": "read", "arguments": {"path": "a"}}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"name": "bash", "arguments": "\"ls\"}"}}]}), json!("tool_calls")),
        data(json!({"id": "cmpl-1", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20,
            "total_tokens": 120, "prompt_tokens_details": {"cached_tokens": 60}}})),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    let (events, err) = decode_bytes(Decoder::new(), bytes.as_bytes(), 11);
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::ResponseId("cmpl-1".into()));
    assert_eq!(deltas(&events, 0).concat(), "Let me see.");
    assert_eq!(deltas(&events, 1).concat(), "Hello there");
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 2,
        kind: BlockKind::ToolCall { id: "abcDEF123".into(), name: "bash".into() }
    }));
    assert_eq!(deltas(&events, 2).concat(), r#"{"command":"ls"}"#);
    let derived = derive_tool_call_id("toolcall:1", 0);
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 3,
        kind: BlockKind::ToolCall { id: derived, name: "read".into() }
    }));
    assert_eq!(deltas(&events, 3), vec![r#"{"path":"a"}"#]);
    let u = last_usage(&events);
    assert_eq!((u.input, u.cache_read, u.output, u.total_tokens), (40, 60, 20, 120));
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("tool_calls".into()) })
    );
}

#[test]
fn stream_faults_have_pi_texts() {
    let text = data(json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]}));
    let decode = |tail: &str| decode_bytes(Decoder::new(), format!("{text}{tail}").as_bytes(), 4);
    assert_eq!(decode("").1.unwrap().message, NO_FINISH_REASON_MESSAGE);
    let (_, err) = decode("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n");
    let err = err.unwrap();
    assert_eq!(
        (err.message.as_str(), err.kind),
        ("Provider stopped with: error (server error)", ProviderErrorKind::Transient)
    );
    assert_eq!(decode("data: {\"object\":\"x\"}\n\n").1.unwrap().message, INVALID_EVENT_MESSAGE);
    assert_eq!(decode("data: {\"choices\":\n\n").1.unwrap().message, "Unexpected end of JSON input");
    let (events, err) = decode("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"model_length\"}]}");
    assert_eq!(err, None, "a last event without its blank line is still read");
    assert!(matches!(events.last(), Some(ProviderEvent::Stop { reason: StopReason::Length, .. })));
}

#[tokio::test]
async fn http_errors_have_pi_texts() {
    let server = FakeServer::start().await.unwrap();
    let body = r#"{"object":"error","message":"Service tier capacity exceeded for this model.","type":"service_tier_capacity_exceeded","code":"3505"}"#;
    server.push(Reply::error(429, body).header("retry-after", "1"));
    server.push(Reply::error(401, ""));
    let (_, err) = collect(&provider(), simple_request(model(&server.url()), "hi"), CancellationToken::new()).await;
    let err = err.unwrap();
    assert_eq!(err.message, format!("Mistral API error (429): {body}"));
    assert!(matches!(err.kind, ProviderErrorKind::RateLimited { .. }));
    let (_, err) = collect(&provider(), simple_request(model(&server.url()), "hi"), CancellationToken::new()).await;
    let err = err.unwrap();
    assert_eq!((err.message.as_str(), err.kind), ("Mistral API error (401): Unauthorized", ProviderErrorKind::Auth));
}

#[test]
fn reasoning_fields_per_level() {
    let mut m = model("");
    assert_eq!(reasoning_fields(&m, ThinkingLevel::High), (None, None));
    m.reasoning = true;
    assert_eq!(reasoning_fields(&m, ThinkingLevel::High), (None, Some("reasoning")));
    assert_eq!(reasoning_fields(&m, ThinkingLevel::Off), (None, None));
    m.thinking_level_map =
        json!({"off": "none", "minimal": null, "low": null, "medium": null, "max": "max"}).as_object().cloned();
    assert_eq!(reasoning_fields(&m, ThinkingLevel::Off), (Some(json!("none")), None));
    assert_eq!(reasoning_fields(&m, ThinkingLevel::Medium), (Some(json!("high")), None));
    assert_eq!(reasoning_fields(&m, ThinkingLevel::Max), (Some(json!("max")), None));
}

#[test]
fn tool_call_ids_have_nine_characters() {
    assert_eq!(derive_tool_call_id("abc-def-123", 0), "abcdef123");
    let id = derive_tool_call_id("call_9|fc_9+/=", 0);
    assert_eq!(id.len(), 9);
    assert!(id.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(derive_tool_call_id("x", 0), derive_tool_call_id("x", 1));
}

/// Usage counts of another JSON type read as absent beside the counts that
/// are numbers (the first cached count present decides, even when it is no count).
#[test]
fn usage_with_odd_types_keeps_the_counts_it_can_read() {
    let usage = |u: Value| {
        let bytes = [data(json!({"id": "cmpl-1", "choices": [], "usage": u})), "data: [DONE]\n\n".to_string()].concat();
        let u = last_usage(&decode_bytes(Decoder::new(), bytes.as_bytes(), 7).0);
        (u.input, u.cache_read, u.output, u.total_tokens)
    };
    assert_eq!(
        usage(json!({"prompt_tokens": 100, "completion_tokens": "20", "total_tokens": 0,
            "prompt_tokens_details": {"cached_tokens": 30.5}, "num_cached_tokens": 10, "extra": [1]})),
        (100, 0, 0, 100)
    );
    assert_eq!(
        usage(json!({"prompt_tokens": [100], "completion_tokens": 20, "total_tokens": "7",
            "promptTokensDetails": {"cachedTokens": 5}})),
        (0, 0, 20, 20)
    );
    assert_eq!(usage(json!({"prompt_tokens": 9, "completion_tokens": -1, "total_tokens": 4})), (9, 0, 0, 4));
}
