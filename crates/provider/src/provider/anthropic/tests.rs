//! Tests of `anthropic-messages`: request bodies and headers against pi
//! 1.6.0's captured requests, byte-level stream decoding, faults through the
//! fake server, and the thinking parameters per level.

use std::time::Duration;

use pi_fake_server::{FakeServer, FakeToolCall, Part, Reply};
use serde_json::{Value, json};

use super::*;
use crate::message::StopReason;
use crate::model::{Model, ModelCost, ThinkingLevel};
use crate::provider::anthropic_request;
use crate::provider::driver::decode_bytes;
use crate::provider::http::STREAM_CUT_MESSAGE;
use crate::provider::test_support::{collect, deltas, fixture, keys, last_usage, simple_request};
use crate::provider::{BlockKind, ProviderErrorKind};

fn provider() -> AnthropicMessages {
    AnthropicMessages::new(HttpClient::new().unwrap())
}

fn model(base_url: &str, reasoning: bool) -> Model {
    Model {
        id: "claude-test".into(),
        name: "Claude Test".into(),
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        base_url: base_url.into(),
        reasoning,
        input: vec!["text".into(), "image".into()],
        context_window: 200_000,
        max_tokens: 8192,
        cost: ModelCost { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 },
        headers: None,
        thinking_level_map: None,
        sampling_params: None,
        sampling_params_by_thinking_level: None,
        compat: None,
        extra: Default::default(),
    }
}

fn decoder() -> Decoder {
    super::decoder(None)
}

async fn request_of(req: ProviderRequest, server: &FakeServer) -> pi_fake_server::RecordedRequest {
    server.push(Reply::text("ok"));
    let (_, err) = collect(&provider(), req, CancellationToken::new()).await;
    assert_eq!(err, None);
    server.requests().pop().unwrap()
}

#[tokio::test]
async fn requests_match_pi_captures() {
    for name in [
        "anthropic_medium",
        "anthropic_off",
        "anthropic_adaptive_xhigh",
        "anthropic_strict_high",
        "anthropic_strict_ok",
    ] {
        let server = FakeServer::start().await.unwrap();
        let f = fixture(name, &server.url());
        let recorded = request_of(f.request, &server).await;
        assert_eq!(recorded.path, f.url, "{name}");
        assert_eq!(recorded.body, f.body, "{name}: body");
        assert_eq!(keys(&recorded.body), keys(&f.body), "{name}: key order");
        for (header, value) in &f.headers {
            assert_eq!(recorded.header(header), value.as_str(), "{name}: header {header}");
        }
        assert_eq!(recorded.header("anthropic-beta").is_some(), f.headers.contains_key("anthropic-beta"), "{name}");
    }
}

/// A stream as the Messages API documents it: thinking with a signature,
/// redacted thinking, text, a ping, two tool calls with split arguments,
/// usage with cache tokens.
const STREAM: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":472,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,\"cache_creation\":{\"ephemeral_5m_input_tokens\":100,\"ephemeral_1h_input_tokens\":0},\"output_tokens\":2}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
    "event: ping\n",
    "data: {\"type\": \"ping\"}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me think about 27 * 453.\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" It is 12231.\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA2b3h\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"GgxBdjrkzLoky3dl1pkiMOYds=\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix/LafPsn4a\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"27 × 453 = 12231. \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Checking files.\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01A\",\"name\":\"bash\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"ls\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" -la\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":4,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01B\",\"name\":\"read\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"a.txt\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":4}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":89,\"output_tokens_details\":{\"thinking_tokens\":40}}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

#[test]
fn documented_stream_decodes_at_every_split() {
    let (events, err) = decode_bytes(decoder(), STREAM.as_bytes(), usize::MAX);
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::ResponseId("msg_01XFDUDYJgAACzvnptvVoYEL".into()));
    assert_eq!(events[2], ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking });
    assert_eq!(deltas(&events, 0).concat(), "Let me think about 27 * 453. It is 12231.");
    let signatures: Vec<&ProviderEvent> =
        events.iter().filter(|e| matches!(e, ProviderEvent::Signature { index: 0, .. })).collect();
    assert_eq!(
        signatures.last(),
        Some(&&ProviderEvent::Signature {
            index: 0,
            signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds=".into()
        })
    );
    assert_eq!(deltas(&events, 1), vec![REDACTED_THINKING_TEXT]);
    assert!(events.contains(&ProviderEvent::Redacted { index: 1 }));
    assert!(events.contains(&ProviderEvent::Signature { index: 1, signature: "EmwKAhgBEgy3va3pzix/LafPsn4a".into() }));
    assert_eq!(deltas(&events, 2).concat(), "27 × 453 = 12231. Checking files.");
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 3,
        kind: BlockKind::ToolCall { id: "toolu_01A".into(), name: "bash".into() }
    }));
    assert_eq!(deltas(&events, 3).concat(), r#"{"command": "ls -la"}"#);
    assert_eq!(deltas(&events, 4), vec![r#"{"path":"#, r#""a.txt"}"#]);
    // Each block ends at its own content_block_stop, before the next starts.
    let end0 = events.iter().position(|e| *e == ProviderEvent::BlockEnd { index: 0 }).unwrap();
    let start1 = events.iter().position(|e| matches!(e, ProviderEvent::BlockStart { index: 1, .. })).unwrap();
    assert!(end0 < start1);
    let u = last_usage(&events);
    assert_eq!((u.input, u.output, u.cache_read, u.cache_write, u.total_tokens), (472, 89, 2000, 100, 2661));
    assert_eq!(u.reasoning, Some(40));
    assert_eq!(u.extra.get("cacheWrite1h"), Some(&json!(0)));
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("tool_use".into()) }));
    for piece in [1, 2, 3, 7, 64] {
        assert_eq!(decode_bytes(decoder(), STREAM.as_bytes(), piece), (events.clone(), None), "piece {piece}");
    }
}

#[test]
fn stream_faults_have_pi_texts() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
    let text = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"par\"}}\n\n";
    let decode = |tail: &str| decode_bytes(decoder(), format!("{start}{text}{tail}").as_bytes(), 5);
    let (events, err) = decode("");
    assert_eq!(err.unwrap().message, NO_MESSAGE_STOP_MESSAGE);
    assert_eq!(deltas(&events, 0), vec!["par"]);
    let (_, err) = decode("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n");
    let err = err.unwrap();
    assert!(err.message.starts_with("Could not parse Anthropic SSE event content_block_delta: "), "{}", err.message);
    assert!(err.message.ends_with(
        r#"; data={"type":"content_block_delta",; raw=event: content_block_delta\ndata: {"type":"content_block_delta","#
    ));
    let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let (_, err) = decode(&format!("event: error\ndata: {overloaded}\n\n"));
    let err = err.unwrap();
    assert_eq!((err.message.as_str(), err.kind.clone()), (overloaded, ProviderErrorKind::Transient));
    let refusal = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let (_, err) = decode(refusal);
    assert_eq!(err.unwrap().message, "The model refused to complete the request");
    let (_, err) =
        decode("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"weird\"}}\n\n");
    assert_eq!(err.unwrap().message, "Unhandled stop reason: weird");
    let (_, err) = decode("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    assert_eq!(err.unwrap().message, NO_STOP_REASON_MESSAGE);
    // Control characters inside strings are repaired like pi does.
    let (events, err) = decode(concat!(
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\tb\"}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}"
    ));
    assert_eq!(err, None, "the unterminated last event is still read, like pi's parser");
    assert_eq!(deltas(&events, 0), vec!["par", "a\tb"]);
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Stop { reason: StopReason::Length, raw: Some("max_tokens".into()) })
    );
}

#[tokio::test]
async fn fake_server_stream_with_thinking_tools_and_cache_usage() {
    let server = FakeServer::start().await.unwrap();
    server.push(
        Reply::text("Done.")
            .with_thinking("Plan it")
            .with_tool_call(FakeToolCall::new("toolu_a", "bash", r#"{"command":"echo hi"}"#).pieces(3))
            .with_tool_call(FakeToolCall::new("toolu_b", "read", r#"{"path":"x.txt"}"#).pieces(2))
            .id("msg_7")
            .usage(120, 30, 100),
    );
    let (events, err) =
        collect(&provider(), simple_request(model(&server.url(), true), "go"), CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::ResponseId("msg_7".into()));
    assert_eq!(deltas(&events, 0).concat(), "Plan it");
    assert!(events.contains(&ProviderEvent::Signature { index: 0, signature: "sig-0".into() }));
    assert_eq!(deltas(&events, 1).concat(), "Done.");
    assert_eq!(deltas(&events, 2).concat(), r#"{"command":"echo hi"}"#);
    assert_eq!(deltas(&events, 3).concat(), r#"{"path":"x.txt"}"#);
    let u = last_usage(&events);
    assert_eq!((u.input, u.cache_read, u.output), (20, 100, 30));
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("tool_use".into()) }));
}

async fn failing(reply: Reply) -> (Vec<ProviderEvent>, ProviderError) {
    let server = FakeServer::start().await.unwrap();
    server.push(reply);
    let (events, err) =
        collect(&provider(), simple_request(model(&server.url(), false), "hi"), CancellationToken::new()).await;
    (events, err.expect("an error"))
}

#[tokio::test]
async fn http_errors_keep_the_raw_body_like_pi() {
    let (_, err) = failing(Reply::anthropic_error(529, "overloaded_error", "Overloaded")).await;
    assert_eq!(err.message, r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
    assert_eq!((err.kind, err.status), (ProviderErrorKind::Transient, Some(529)));
    let (_, err) =
        failing(Reply::anthropic_error(429, "rate_limit_error", "Number of requests").header("retry-after", "7")).await;
    assert_eq!(err.kind, ProviderErrorKind::RateLimited { retry_after: Some(Duration::from_secs(7)) });
    let (_, err) = failing(Reply::error(500, "Internal Server Error")).await;
    assert_eq!((err.message.as_str(), err.kind), ("500 Internal Server Error", ProviderErrorKind::Transient));
    let (_, err) = failing(Reply::error(503, "")).await;
    assert_eq!(err.message, "503 status code (no body)");
    let (_, err) = failing(Reply::anthropic_error(401, "authentication_error", "invalid x-api-key")).await;
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    let (_, err) = failing(Reply::anthropic_error(
        400,
        "invalid_request_error",
        "prompt is too long: 213462 tokens > 200000 maximum",
    ))
    .await;
    assert_eq!(err.kind, ProviderErrorKind::ContextOverflow);
    assert!(err.message.starts_with(r#"400 {"type":"error","error":{"type":"invalid_request_error""#));
    let (_, err) = failing(Reply::error(400, r#"{"message":"top-level"}"#)).await;
    assert_eq!(err.message, "400 top-level");
}

#[tokio::test]
async fn cut_and_unfinished_streams() {
    let (events, err) = failing(Reply::text_chunks(["par", "tial", "never"]).cut_after(2)).await;
    assert_eq!((err.message.as_str(), err.kind), (STREAM_CUT_MESSAGE, ProviderErrorKind::Transient));
    assert_eq!(deltas(&events, 0), vec!["par", "tial"]);
    let (_, err) = failing(Reply::text("hello").without_done()).await;
    assert_eq!((err.message.as_str(), err.kind), (NO_MESSAGE_STOP_MESSAGE, ProviderErrorKind::Transient));
    let (_, err) =
        failing(Reply::text("hello").with_part(Part::RawData("{\"type\":\"content_block_delta\",".into()))).await;
    assert!(err.message.starts_with("Could not parse Anthropic SSE event content_block_delta"));
}

#[tokio::test]
async fn missing_key_fails_without_a_request_and_auth_headers_count() {
    let server = FakeServer::start().await.unwrap();
    let mut req = simple_request(model(&server.url(), false), "hi");
    req.api_key = None;
    let (_, err) = collect(&provider(), req.clone(), CancellationToken::new()).await;
    assert_eq!(err.unwrap().message, "No API key for provider: anthropic");
    assert_eq!(server.request_count(), 0);
    req.headers.insert("Authorization".into(), "Bearer proxy".into());
    let recorded = request_of(req, &server).await;
    assert_eq!(recorded.header("authorization"), Some("Bearer proxy"));
    assert_eq!(recorded.header("x-api-key"), None);
}

fn body_for(model: Model, level: ThinkingLevel) -> Value {
    let mut req = simple_request(model, "hi");
    req.thinking_level = level;
    let (llm, plan) = anthropic_request::prepare(&req, false);
    anthropic_request::build_body(&req, &plan, &llm)
}

#[test]
fn thinking_parameters_per_level() {
    let m = model("http://x", true);
    assert_eq!(body_for(m.clone(), ThinkingLevel::Off)["thinking"], json!({"type": "disabled"}));
    let budget = |level| body_for(m.clone(), level)["thinking"]["budget_tokens"].clone();
    assert_eq!(budget(ThinkingLevel::Minimal), json!(1024));
    assert_eq!(budget(ThinkingLevel::Low), json!(2048));
    // maxTokens 8192: the budget leaves 1024 for the answer.
    assert_eq!(budget(ThinkingLevel::Medium), json!(7168));
    assert_eq!(body_for(m.clone(), ThinkingLevel::High)["max_tokens"], json!(8192));
    let plain = model("http://x", false);
    let body = body_for(plain, ThinkingLevel::High);
    assert!(body.get("thinking").is_none(), "no thinking parameter for a non-reasoning model");
    let mut no_off = m.clone();
    no_off.thinking_level_map = json!({"off": null}).as_object().cloned();
    assert!(body_for(no_off, ThinkingLevel::Off).get("thinking").is_none());
    let mut adaptive = m.clone();
    adaptive.compat = json!({"forceAdaptiveThinking": true}).as_object().cloned();
    let body = body_for(adaptive.clone(), ThinkingLevel::Minimal);
    assert_eq!(body["thinking"], json!({"type": "adaptive", "display": "summarized"}));
    assert_eq!(body["output_config"], json!({"effort": "low"}));
    assert_eq!(body_for(adaptive.clone(), ThinkingLevel::Max)["output_config"], json!({"effort": "high"}));
    adaptive.thinking_level_map = json!({"max": "max"}).as_object().cloned();
    assert_eq!(body_for(adaptive, ThinkingLevel::Max)["output_config"], json!({"effort": "max"}));
}

#[test]
fn managed_effort_models_mark_levels_in_messages() {
    let mut m = model("http://x", true);
    m.compat = json!({"forceAdaptiveThinking": true, "supportsMidConvoEffort": true}).as_object().cloned();
    let mut req = simple_request(m, "hi");
    req.thinking_level = ThinkingLevel::Medium;
    let mut earlier = crate::provider::convert::tests::assistant(
        vec![crate::message::ContentBlock::text("before")],
        StopReason::Stop,
        "claude-test",
    );
    if let crate::message::AgentMessage::Assistant(a) = &mut earlier {
        a.api = "anthropic-messages".into();
        a.provider = "anthropic".into();
        a.extra.insert("providerThinkingLevel".into(), json!("high"));
    }
    req.messages = vec![crate::provider::test_support::user("a"), earlier, crate::provider::test_support::user("b")];
    let (llm, plan) = anthropic_request::prepare(&req, false);
    let body = anthropic_request::build_body(&req, &plan, &llm);
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs[1], json!({"role": "system", "content": [], "output_config": {"effort": "high"}}));
    assert_eq!(msgs.last().unwrap(), &json!({"role": "system", "content": [], "output_config": {"effort": "medium"}}));
    assert_eq!(body["output_config"], json!({"effort": "low"}));
    assert_eq!(body["thinking"]["block_binding"], json!({"prefix_mismatch_behavior": "drop_block"}));
    let betas = anthropic_request::beta_features(&req, &plan);
    assert_eq!(betas, ["mid-conversation-output-config-2026-07-01", "thinking-binding-controls-2026-08-01"]);
}

#[tokio::test]
async fn oauth_tokens_use_bearer_auth_and_claude_code_identity() {
    let server = FakeServer::start().await.unwrap();
    let mut req = simple_request(model(&server.url(), false), "hi");
    req.api_key = Some("sk-ant-oat01-abc".into());
    server.push(Reply::tool_call("toolu_1", "Bash", r#"{"command":"ls"}"#));
    let (events, err) = collect(&provider(), req, CancellationToken::new()).await;
    assert_eq!(err, None);
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 0,
        kind: BlockKind::ToolCall { id: "toolu_1".into(), name: "bash".into() }
    }));
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), Some("Bearer sk-ant-oat01-abc"));
    assert_eq!(r.header("x-api-key"), None);
    assert_eq!(r.header("anthropic-beta"), Some("claude-code-20250219,oauth-2025-04-20"));
    assert_eq!(r.header("x-app"), Some("cli"));
    assert_eq!(r.body["system"][0]["text"], "You are Claude Code, Anthropic's official CLI for Claude.");
    assert_eq!(r.body["tools"][0]["name"], "Bash");
}

#[tokio::test]
async fn configured_beta_header_and_session_affinity() {
    let server = FakeServer::start().await.unwrap();
    let mut m = model(&server.url(), true);
    m.provider = "openrouter".into();
    m.headers = json!({"anthropic-beta": "a-1, b-2,a-1"}).as_object().cloned();
    let mut req = simple_request(m, "hi");
    req.session_id = Some("sess-9".into());
    req.thinking_level = ThinkingLevel::Low;
    let r = request_of(req, &server).await;
    assert_eq!(r.header("anthropic-beta"), Some("a-1,b-2"));
    assert_eq!(r.header("x-session-id"), Some("sess-9"));
}

#[tokio::test]
async fn strict_tool_limits_fall_back_to_plain_tools_for_the_session() {
    let server = FakeServer::start().await.unwrap();
    let limit = "Too many strict tools (25). The maximum number of strict tools is 20.";
    server.push(Reply::anthropic_error(400, "invalid_request_error", limit));
    server.push(Reply::text("ok"));
    server.push(Reply::text("again"));
    let mut m = model(&server.url(), false);
    m.compat = json!({"supportsStrictTools": true}).as_object().cloned();
    let mut req = simple_request(m, "hi");
    req.session_id = Some(format!("strict-limit-{}", std::process::id()));
    let (_, err) = collect(&provider(), req.clone(), CancellationToken::new()).await;
    assert_eq!(err, None);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["tools"][0]["strict"], true);
    assert!(requests[1].body["tools"][0].get("strict").is_none());
    let (_, err) = collect(&provider(), req, CancellationToken::new()).await;
    assert_eq!(err, None);
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the session goes plain at once");
    assert!(requests[2].body["tools"][0].get("strict").is_none());
}

/// Usage counts of another JSON type read as absent beside the counts that
/// are numbers; in `message_delta` an absent count keeps the earlier one.
#[test]
fn usage_with_odd_types_keeps_the_counts_it_can_read() {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 30,
        "output_tokens": "2", "cache_read_input_tokens": 5.5, "cache_creation_input_tokens": 4, "extra": [1]}}});
    let delta = |usage: Value| json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage});
    let decode = |usage: Value| {
        let events = [start.clone(), delta(usage), json!({"type": "message_stop"})];
        let bytes: String =
            events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
        let (events, err) = decode_bytes(decoder(), bytes.as_bytes(), 6);
        assert_eq!(err, None);
        let first = events.iter().find_map(|e| match e {
            ProviderEvent::Usage(u) => Some((u.input, u.output, u.cache_read, u.cache_write)),
            _ => None,
        });
        let u = last_usage(&events);
        (first, (u.input, u.output, u.cache_read, u.cache_write))
    };
    assert_eq!(
        decode(json!({"input_tokens": "31", "output_tokens": 9, "cache_read_input_tokens": 6})),
        (Some((30, 0, 0, 4)), (30, 9, 6, 4))
    );
    assert_eq!(
        decode(json!({"input_tokens": 40, "output_tokens": -9, "cache_creation_input_tokens": [1]})),
        (Some((30, 0, 0, 4)), (40, 0, 0, 4))
    );
    assert_eq!(decode(json!(["not", "an", "object"])), (Some((30, 0, 0, 4)), (30, 0, 0, 4)));
}
