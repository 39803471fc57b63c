//! Tests of `google-generative-ai`: request bodies and headers against pi
//! 1.6.0's captured requests, byte-level decoding of Gemini chunks (thought
//! parts, signatures, function calls, usage), faults through the fake
//! server, and the thinking config per level.

use std::time::Duration;

use pi_fake_server::{FakeServer, FakeToolCall, Part, Reply};
use serde_json::{Value, json};

use super::*;
use crate::model::{Model, ModelCost, ThinkingLevel};
use crate::provider::driver::decode_bytes;
use crate::provider::google_request::{self, uses_thinking_level};
use crate::provider::http::STREAM_CUT_MESSAGE;
use crate::provider::test_support::{collect, deltas, fixture, keys, last_usage, simple_request};
use crate::provider::{ProviderErrorKind, ProviderEvent};

fn provider() -> GoogleGenerativeAi {
    GoogleGenerativeAi::new(HttpClient::new().unwrap())
}

fn model(base_url: &str, id: &str, reasoning: bool) -> Model {
    Model {
        id: id.into(),
        name: id.into(),
        api: "google-generative-ai".into(),
        provider: "google".into(),
        base_url: base_url.into(),
        reasoning,
        input: vec!["text".into(), "image".into()],
        context_window: 1_048_576,
        max_tokens: 65_536,
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
    for name in ["google_medium", "google_off", "google_gemini3_low"] {
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
    }
}

fn chunk(parts: Value, extra: Value) -> String {
    let mut c = json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
        "modelVersion": "gemini-2.5-flash", "responseId": "resp-g1"});
    if let Some(o) = extra.as_object() {
        for (k, v) in o {
            if k == "finishReason" {
                c["candidates"][0][k] = v.clone();
            } else {
                c[k] = v.clone();
            }
        }
    }
    format!("data: {c}\r\n\r\n")
}

fn stream_bytes() -> String {
    [
        chunk(json!([{"text": "**Planning**", "thought": true}]), json!({"usageMetadata": {"promptTokenCount": 1000}})),
        chunk(json!([{"text": " the steps", "thought": true}]), json!({})),
        chunk(json!([{"text": "Hello", "thoughtSignature": "c2lnMQ=="}]), json!({})),
        chunk(json!([{"text": " world"}]), json!({})),
        chunk(
            json!([{"functionCall": {"name": "bash", "args": {"command": "ls"}}, "thoughtSignature": "Q0FMTA=="},
                {"functionCall": {"id": "call-2", "name": "read", "args": {"path": "a.txt"}}}]),
            json!({"finishReason": "STOP", "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 50,
                "totalTokenCount": 1080, "cachedContentTokenCount": 600, "thoughtsTokenCount": 30}}),
        ),
    ]
    .concat()
}

#[test]
fn documented_stream_decodes_at_every_split() {
    let bytes = stream_bytes();
    let (events, err) = decode_bytes(Decoder::new(), bytes.as_bytes(), usize::MAX);
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::ResponseId("resp-g1".into()));
    assert_eq!(events[1], ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking });
    assert_eq!(deltas(&events, 0).concat(), "**Planning** the steps");
    assert_eq!(deltas(&events, 1).concat(), "Hello world");
    assert!(events.contains(&ProviderEvent::Signature { index: 1, signature: "c2lnMQ==".into() }));
    let end0 = events.iter().position(|e| *e == ProviderEvent::BlockEnd { index: 0 }).unwrap();
    let start1 = events.iter().position(|e| matches!(e, ProviderEvent::BlockStart { index: 1, .. })).unwrap();
    assert!(end0 < start1, "switching from thought to text ends the thinking block");
    let call = events.iter().find_map(|e| match e {
        ProviderEvent::BlockStart { index: 2, kind: BlockKind::ToolCall { id, name } } => {
            Some((id.clone(), name.clone()))
        }
        _ => None,
    });
    let (id, name) = call.unwrap();
    assert!(id.starts_with("bash_"), "a generated id: {id}");
    assert_eq!(name, "bash");
    assert_eq!(deltas(&events, 2), vec![r#"{"command":"ls"}"#]);
    assert!(events.contains(&ProviderEvent::Signature { index: 2, signature: "Q0FMTA==".into() }));
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 3,
        kind: BlockKind::ToolCall { id: "call-2".into(), name: "read".into() }
    }));
    let u = last_usage(&events);
    assert_eq!((u.input, u.cache_read, u.output, u.total_tokens), (400, 600, 80, 1080));
    assert_eq!(u.reasoning, Some(30));
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("STOP".into()) }));
    for piece in [1, 5, 33] {
        let (again, err) = decode_bytes(Decoder::new(), bytes.as_bytes(), piece);
        assert_eq!(err, None);
        assert_eq!(again.len(), events.len(), "piece {piece}");
    }
}

#[test]
fn stream_faults_have_pi_texts() {
    let first = chunk(json!([{"text": "par"}]), json!({}));
    let decode = |tail: &str| decode_bytes(Decoder::new(), format!("{first}{tail}").as_bytes(), 9);
    let (events, err) = decode("");
    assert_eq!(err.unwrap().message, NO_FINISH_REASON_MESSAGE);
    assert_eq!(events.last(), Some(&ProviderEvent::BlockEnd { index: 0 }));
    let error = r#"{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}"#;
    let (_, err) = decode(&format!("data: {error}\r\n\r\n"));
    let err = err.unwrap();
    assert_eq!(err.message, format!("got status: INTERNAL. {error}"));
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    let (_, err) = decode("data: {\"candidates\":[\r\n\r\n");
    assert_eq!(err.unwrap().message, "Unexpected end of JSON input");
    let (_, err) = decode("data: {\"candidates\":[]}");
    assert_eq!(err.unwrap().message, INCOMPLETE_SEGMENT_MESSAGE);
    let (_, err) = decode(&chunk(json!([]), json!({"finishReason": "SAFETY"})));
    assert_eq!(err.unwrap().message, "Provider stopped with: SAFETY");
    let (_, err) = decode(&chunk(json!([]), json!({"finishReason": "NEW_REASON"})));
    assert_eq!(err.unwrap().message, "Unhandled stop reason: NEW_REASON");
    let (events, err) = decode(&chunk(json!([{"text": "x"}]), json!({"finishReason": "MAX_TOKENS"})));
    assert_eq!(err, None);
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Stop { reason: StopReason::Length, raw: Some("MAX_TOKENS".into()) })
    );
}

#[tokio::test]
async fn fake_server_stream_with_thoughts_and_calls() {
    let server = FakeServer::start().await.unwrap();
    server.push(
        Reply::text("Done.")
            .with_thinking("Plan it")
            .with_tool_call(FakeToolCall::new("c1", "bash", r#"{"command":"echo hi"}"#))
            .usage(120, 30, 100),
    );
    let m = model(&format!("{}/v1beta", server.url()), "gemini-2.5-flash", true);
    let (events, err) = collect(&provider(), simple_request(m, "go"), CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(deltas(&events, 0).concat(), "Plan it");
    assert_eq!(deltas(&events, 1).concat(), "Done.");
    assert_eq!(deltas(&events, 2), vec![r#"{"command":"echo hi"}"#]);
    let u = last_usage(&events);
    assert_eq!((u.input, u.cache_read, u.output), (20, 100, 30));
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("STOP".into()) }));
    assert_eq!(server.requests()[0].path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
}

async fn failing(reply: Reply) -> (Vec<ProviderEvent>, ProviderError) {
    let server = FakeServer::start().await.unwrap();
    server.push(reply);
    let m = model(&format!("{}/v1beta", server.url()), "gemini-2.5-flash", false);
    let (events, err) = collect(&provider(), simple_request(m, "hi"), CancellationToken::new()).await;
    (events, err.expect("an error"))
}

#[tokio::test]
async fn http_errors_have_sdk_texts() {
    let (_, err) = failing(
        Reply::google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")
            .header("retry-after", "4"),
    )
    .await;
    assert_eq!(
        err.message,
        r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}"#
    );
    assert_eq!(err.kind, ProviderErrorKind::RateLimited { retry_after: Some(Duration::from_secs(4)) });
    let (_, err) = failing(Reply::error(500, "Internal Server Error")).await;
    assert_eq!(
        err.message,
        r#"{"error":{"message":"Internal Server Error","code":500,"status":"Internal Server Error"}}"#
    );
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    let (_, err) = failing(Reply::google_error(503, "UNAVAILABLE", "The model is overloaded.")).await;
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    let (_, err) = failing(Reply::google_error(400, "INVALID_ARGUMENT", "API key not valid.")).await;
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    let (_, err) = failing(Reply::google_error(401, "UNAUTHENTICATED", "bad key")).await;
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    let overflow = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).";
    let (_, err) = failing(Reply::google_error(400, "INVALID_ARGUMENT", overflow)).await;
    assert_eq!(err.kind, ProviderErrorKind::ContextOverflow);
}

#[tokio::test]
async fn cut_streams_and_connection_failures() {
    let (events, err) = failing(Reply::text_chunks(["par", "tial", "never"]).cut_after(2)).await;
    assert_eq!((err.message.as_str(), err.kind), (STREAM_CUT_MESSAGE, ProviderErrorKind::Transient));
    assert_eq!(deltas(&events, 0), vec!["par", "tial"]);
    let (_, err) = failing(Reply::text("x").with_part(Part::RawData("{bad".into()))).await;
    assert!(err.message.starts_with("Invalid JSON in stream chunk"), "{}", err.message);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let m = model(&format!("http://127.0.0.1:{port}/v1beta"), "gemini-2.5-flash", false);
    let (_, err) = collect(&provider(), simple_request(m, "hi"), CancellationToken::new()).await;
    let err = err.unwrap();
    assert!(err.message.starts_with("fetch failed: "), "{}", err.message);
    assert_eq!(err.kind, ProviderErrorKind::Transient);
}

fn config(mut m: Model, level: ThinkingLevel) -> Value {
    m.base_url = "http://127.0.0.1:1/v1beta".into();
    let mut req = simple_request(m, "hi");
    req.thinking_level = level;
    google_request::build_body(&req).unwrap()["generationConfig"]["thinkingConfig"].clone()
}

#[test]
fn thinking_config_per_level() {
    let flash = model("", "gemini-2.5-flash", true);
    assert_eq!(config(flash.clone(), ThinkingLevel::Off), json!({"thinkingBudget": 0}));
    assert_eq!(config(flash.clone(), ThinkingLevel::Minimal), json!({"includeThoughts": true, "thinkingBudget": 128}));
    assert_eq!(config(flash.clone(), ThinkingLevel::High), json!({"includeThoughts": true, "thinkingBudget": 24576}));
    assert_eq!(config(flash, ThinkingLevel::Max), json!({"includeThoughts": true, "thinkingBudget": 24576}));
    let pro = model("", "gemini-2.5-pro", true);
    assert_eq!(config(pro, ThinkingLevel::High)["thinkingBudget"], 32768);
    assert_eq!(config(model("", "gemini-2.0-flash-thinking", true), ThinkingLevel::Low)["thinkingBudget"], -1);
    let mut g3 = model("", "gemini-3-pro-preview", true);
    g3.thinking_level_map = json!({"off": null, "minimal": null, "medium": null}).as_object().cloned();
    assert_eq!(config(g3.clone(), ThinkingLevel::Medium), json!({"includeThoughts": true, "thinkingLevel": "HIGH"}));
    assert_eq!(config(g3, ThinkingLevel::Off), json!({"thinkingLevel": "LOW"}));
    let plain = model("", "gemini-2.0-flash", false);
    assert_eq!(config(plain, ThinkingLevel::High), Value::Null);
    let mut odd = model("", "gemini-3-flash", true);
    odd.thinking_level_map = json!({"high": "turbo"}).as_object().cloned();
    let mut req = simple_request(odd, "hi");
    req.thinking_level = ThinkingLevel::High;
    let err = google_request::build_body(&req).unwrap_err();
    assert_eq!(err.message, "Unsupported Google thinking level mapping for google/gemini-3-flash: high -> turbo");
}

#[test]
fn thinking_level_models_are_recognised() {
    let uses = |id: &str| uses_thinking_level(&model("", id, true));
    assert!(uses("gemini-3-pro-preview") && uses("gemini-3.1-flash") && uses("gemini-4-argon"));
    assert!(uses("gemini-flash-latest") && uses("gemma-4-27b") && uses("models/gemma4-it"));
    assert!(!uses("gemini-2.5-pro") && !uses("gemini-3-nano") && !uses("gemini-2.0-flash"));
}

#[test]
fn const_becomes_enum_for_gemini() {
    let schema = json!({"type": "object", "properties": {"mode": {"const": "fast"}, "const": {"type": "string"}},
        "anyOf": [{"const": 3}], "examples": [{"const": "keep"}]});
    assert_eq!(
        google_request::const_as_enum(&schema, false),
        json!({"type": "object", "properties": {"mode": {"enum": ["fast"]}, "const": {"type": "string"}},
            "anyOf": [{"enum": [3]}], "examples": [{"const": "keep"}]})
    );
}

/// pi-ai's `google-generative-ai` `stream()` options: `temperature`,
/// `toolChoice` as the function-calling mode, `thinking.budgetTokens` as
/// given, `maxTokens` only when given, no thinking setting when unsaid.
#[test]
fn api_options_as_pi_ai_sends_them() {
    let mut req = simple_request(model("http://127.0.0.1:1/v1beta", "gemini-2.5-flash", true), "hi");
    req.tools = vec![crate::provider::test_support::bash_tool()];
    req.thinking_level = ThinkingLevel::Medium;
    req.api_options = crate::provider::ApiOptions {
        temperature: serde_json::Number::from_f64(0.5),
        tool_choice: Some(json!("any")),
        thinking_budget: Some(3000),
        max_tokens_as_given: true,
        ..Default::default()
    };
    let body = google_request::build_body(&req).unwrap();
    assert_eq!(body["toolConfig"], json!({"functionCallingConfig": {"mode": "ANY"}}));
    assert_eq!(
        body["generationConfig"],
        json!({"temperature": 0.5, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 3000}})
    );
    req.api_options = crate::provider::ApiOptions {
        tool_choice: Some(json!("auto")),
        max_tokens_as_given: true,
        thinking_unsaid: true,
        ..Default::default()
    };
    req.thinking_level = ThinkingLevel::Off;
    req.max_tokens = Some(200);
    let body = google_request::build_body(&req).unwrap();
    assert_eq!(body["toolConfig"], json!({"functionCallingConfig": {"mode": "AUTO"}}));
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 200}));
    // The agent's own request: no options, the cap fitted, the level's config.
    req.api_options = Default::default();
    let body = google_request::build_body(&req).unwrap();
    assert_eq!(body.get("toolConfig"), None);
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 200, "thinkingConfig": {"thinkingBudget": 0}}));
}
