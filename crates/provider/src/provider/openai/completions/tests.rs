//! Tests of `openai-completions` against the fake model server.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pi_fake_server::{FakeServer, FakeToolCall, Part, Reply};
use serde_json::{Map, json};

use super::*;
use crate::message::{AgentMessage, ContentBlock, ImageContent, ThinkingContent, UserContent, UserMessage};
use crate::model::{Model, ModelCost, ThinkingLevel};
use crate::provider::convert::tests::{assistant, call, result};
use crate::provider::http::STREAM_CUT_MESSAGE;
use crate::provider::{ProviderErrorKind, ToolSpec};

fn model(server: &FakeServer, reasoning: bool) -> Model {
    Model {
        id: "m".into(),
        name: "M".into(),
        api: "openai-completions".into(),
        provider: "p".into(),
        base_url: server.base_url(),
        reasoning,
        input: vec!["text".into(), "image".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        cost: ModelCost::default(),
        headers: None,
        thinking_level_map: None,
        sampling_params: None,
        sampling_params_by_thinking_level: None,
        compat: None,
        extra: Default::default(),
    }
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(text)]),
        timestamp: 1,
        extra: Map::new(),
    })
}

fn request(model: Model, messages: Vec<AgentMessage>) -> ProviderRequest {
    ProviderRequest {
        model,
        system_prompt: "You are terse.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "Run a command".into(),
            parameters: json!({"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}}}),
        }],
        thinking_level: ThinkingLevel::Off,
        api_key: Some("sk-test".into()),
        headers: HashMap::new(),
        max_tokens: None,
        session_id: None,
        credential: None,
        env: Default::default(),
        api_options: Default::default(),
    }
}

fn provider() -> OpenAiCompletions {
    OpenAiCompletions::new(HttpClient::new().unwrap())
}

async fn run(req: ProviderRequest) -> (Vec<ProviderEvent>, Option<ProviderError>) {
    run_with(req, CancellationToken::new()).await
}

async fn run_with(req: ProviderRequest, cancel: CancellationToken) -> (Vec<ProviderEvent>, Option<ProviderError>) {
    let mut stream = provider().stream(req, cancel);
    let mut events = Vec::new();
    let mut opened = false;
    while let Some(item) = stream.next().await {
        match item {
            // The answer's start comes first, once; the events after it are returned.
            Ok(ProviderEvent::Opened) => {
                assert!(!opened && events.is_empty(), "Opened once, before any other event: {events:?}");
                opened = true;
            }
            Ok(ev) => {
                assert!(opened, "{ev:?} before Opened");
                events.push(ev)
            }
            Err(e) => {
                assert!(stream.next().await.is_none(), "the stream must end after an error");
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

fn deltas(events: &[ProviderEvent], index: usize) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::BlockDelta { index: i, delta } if *i == index => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn streams_text_with_usage_and_stop() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text_chunks(["Hel", "lo"]).id("chatcmpl-1").usage(100, 20, 30));
    let (events, err) = run(request(model(&server, false), vec![user("hi")])).await;
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::ResponseId("chatcmpl-1".into()));
    assert_eq!(events[1], ProviderEvent::BlockStart { index: 0, kind: BlockKind::Text });
    assert_eq!(deltas(&events, 0), vec!["Hel", "lo"]);
    let usage = events.iter().find_map(|e| match e {
        ProviderEvent::Usage(u) => Some(u.clone()),
        _ => None,
    });
    let usage = usage.unwrap();
    assert_eq!(
        (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens),
        (70, 20, 30, 0, 120)
    );
    let n = events.len();
    assert_eq!(events[n - 2], ProviderEvent::BlockEnd { index: 0 });
    assert_eq!(events[n - 1], ProviderEvent::Stop { reason: StopReason::Stop, raw: Some("stop".into()) });
}

#[tokio::test]
async fn streams_reasoning_then_text_and_ends_blocks_in_order_at_the_end() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text("The answer is 4.").with_thinking("2+2 is 4"));
    let (events, err) = run(request(model(&server, true), vec![user("2+2?")])).await;
    assert_eq!(err, None);
    assert!(events.contains(&ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking }));
    assert!(events.contains(&ProviderEvent::Signature { index: 0, signature: "reasoning_content".into() }));
    assert_eq!(deltas(&events, 0).concat(), "2+2 is 4");
    assert_eq!(deltas(&events, 1).concat(), "The answer is 4.");
    let ends: Vec<usize> = events
        .iter()
        .enumerate()
        .filter_map(|(pos, e)| matches!(e, ProviderEvent::BlockEnd { .. }).then_some(pos))
        .collect();
    let last_delta = events.iter().rposition(|e| matches!(e, ProviderEvent::BlockDelta { .. })).unwrap();
    assert!(ends.iter().all(|p| *p > last_delta), "all block ends come after every delta");
    assert_eq!(events[ends[0]], ProviderEvent::BlockEnd { index: 0 });
    assert_eq!(events[ends[1]], ProviderEvent::BlockEnd { index: 1 });
}

#[tokio::test]
async fn streams_two_tool_calls_with_split_arguments() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::tool_calls([
        FakeToolCall::new("call_a", "bash", r#"{"command":"echo hi"}"#).pieces(3),
        FakeToolCall::new("call_b", "read", r#"{"path":"x.txt"}"#).pieces(2),
    ]));
    let (events, err) = run(request(model(&server, false), vec![user("tools")])).await;
    assert_eq!(err, None);
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 0,
        kind: BlockKind::ToolCall { id: "call_a".into(), name: "bash".into() }
    }));
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 1,
        kind: BlockKind::ToolCall { id: "call_b".into(), name: "read".into() }
    }));
    let a = deltas(&events, 0);
    assert_eq!(a[0], "", "the first tool-call delta is empty, like pi's");
    assert_eq!(a.len(), 4);
    assert_eq!(a.concat(), r#"{"command":"echo hi"}"#);
    assert_eq!(deltas(&events, 1).concat(), r#"{"path":"x.txt"}"#);
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("tool_calls".into()) })
    );
}

#[tokio::test]
async fn request_body_has_pi_shape() {
    let server = FakeServer::start().await.unwrap();
    let mut m = model(&server, true);
    m.headers = json!({"x-model-header": "mh"}).as_object().cloned();
    let image = ContentBlock::Image(ImageContent { data: "QUJD".into(), mime_type: "image/png".into() });
    let thinking = ContentBlock::Thinking(ThinkingContent {
        thinking: "pondering".into(),
        thinking_signature: Some("reasoning_content".into()),
        redacted: false,
    });
    let messages = vec![
        AgentMessage::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text("look"), image]),
            timestamp: 1,
            extra: Map::new(),
        }),
        assistant(vec![thinking, ContentBlock::text("Seen.")], StopReason::Stop, "m"),
        user("run it"),
        assistant(vec![call("c1", "bash"), call("c2", "bash")], StopReason::ToolUse, "m"),
        result("c1", vec![ContentBlock::text("out1")]),
        result("c2", vec![]),
        assistant(vec![ContentBlock::text("aborted partial")], StopReason::Aborted, "m"),
        user("next"),
    ];
    let mut req = request(m, messages);
    req.thinking_level = ThinkingLevel::Medium;
    req.headers.insert("x-extra".into(), "e".into());
    let (_, err) = run(req).await;
    assert_eq!(err, None);
    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(recorded.header("x-model-header"), Some("mh"));
    assert_eq!(recorded.header("x-extra"), Some("e"));
    let body = &recorded.body;
    let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "model",
            "messages",
            "stream",
            "stream_options",
            "store",
            "max_completion_tokens",
            "tools",
            "reasoning_effort"
        ]
    );
    assert_eq!(body["reasoning_effort"], "medium");
    assert_eq!(body["max_completion_tokens"], 16_384);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "bash", "description": "Run a command",
            "parameters": {"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}}}}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}]},
            {"role": "assistant", "content": "Seen.", "reasoning_content": "pondering"},
            {"role": "user", "content": [{"type": "text", "text": "run it"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"a\":1}"}},
                {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{\"a\":1}"}}]},
            {"role": "tool", "content": "out1", "tool_call_id": "c1"},
            {"role": "tool", "content": "(no tool output)", "tool_call_id": "c2"},
            {"role": "user", "content": [{"type": "text", "text": "next"}]}
        ])
    );
}

#[tokio::test]
async fn developer_role_and_compat_switches() {
    let server = FakeServer::start().await.unwrap();
    let mut m = model(&server, true);
    m.compat = json!({"supportsDeveloperRole": true, "supportsStore": false, "maxTokensField": "max_tokens"})
        .as_object()
        .cloned();
    m.thinking_level_map = json!({"high": "max-effort"}).as_object().cloned();
    let mut req = request(m, vec![user("x")]);
    req.thinking_level = ThinkingLevel::High;
    req.max_tokens = Some(1000);
    let _ = run(req).await;
    let body = &server.requests()[0].body;
    assert_eq!(body["messages"][0]["role"], "developer");
    assert!(body.get("store").is_none());
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["reasoning_effort"], "max-effort");
}

async fn failing(reply: Reply) -> (Vec<ProviderEvent>, ProviderError) {
    let server = FakeServer::start().await.unwrap();
    server.push(reply);
    let (events, err) = run(request(model(&server, false), vec![user("hi")])).await;
    (events, err.expect("an error"))
}

#[tokio::test]
async fn http_500_is_transient_with_pi_text() {
    let (_, err) =
        failing(Reply::openai_error(500, "The server had an error while processing your request.", "server_error"))
            .await;
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    assert_eq!(err.status, Some(500));
    assert_eq!(
        err.message,
        r#"500: {"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}"#
    );
}

#[tokio::test]
async fn http_429_carries_retry_after() {
    let (_, err) = failing(Reply::openai_error(429, "Rate limit reached", "requests").header("retry-after", "2")).await;
    assert_eq!(err.kind, ProviderErrorKind::RateLimited { retry_after: Some(Duration::from_secs(2)) });
    let (_, err) = failing(Reply::openai_error(429, "slow", "requests").header("retry-after-ms", "250")).await;
    assert_eq!(err.kind, ProviderErrorKind::RateLimited { retry_after: Some(Duration::from_millis(250)) });
}

#[tokio::test]
async fn http_401_is_auth_and_400_is_invalid() {
    let (_, err) = failing(Reply::openai_error(401, "Incorrect API key provided", "invalid_request_error")).await;
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    let (_, err) = failing(Reply::openai_error(400, "bad thing", "invalid_request_error")).await;
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert_eq!(err.message, r#"400: {"message":"bad thing","type":"invalid_request_error","param":null,"code":null}"#);
}

#[tokio::test]
async fn overflow_body_is_context_overflow() {
    let body = json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let (_, err) = failing(Reply::error(400, body.to_string())).await;
    assert_eq!(err.kind, ProviderErrorKind::ContextOverflow);
    assert!(err.message.starts_with(r#"400: {"message":"This model's maximum context length"#));
}

#[tokio::test]
async fn cut_stream_is_transient_and_keeps_partial_deltas() {
    let (events, err) = failing(Reply::text_chunks(["par", "tial", "never"]).cut_after(2)).await;
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    assert_eq!(err.message, STREAM_CUT_MESSAGE);
    assert_eq!(deltas(&events, 0), vec!["par", "tial"]);
    assert!(!events.iter().any(|e| matches!(e, ProviderEvent::BlockEnd { .. })), "no block end on a cut");
}

#[tokio::test]
async fn missing_finish_reason_is_a_transient_error_after_the_block_ends() {
    let (events, err) = failing(Reply::text("hello").without_finish_reason()).await;
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    assert_eq!(err.message, "Stream ended without finish_reason");
    assert_eq!(events.last(), Some(&ProviderEvent::BlockEnd { index: 0 }));
}

#[tokio::test]
async fn missing_done_is_fine_when_finish_reason_came() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text("hello").without_done());
    let (events, err) = run(request(model(&server, false), vec![user("hi")])).await;
    assert_eq!(err, None);
    assert!(matches!(events.last(), Some(ProviderEvent::Stop { reason: StopReason::Stop, .. })));
}

#[tokio::test]
async fn error_finish_reasons_and_in_stream_errors() {
    let (_, err) = failing(Reply::text("x").finish_reason("content_filter")).await;
    assert_eq!(err.message, "Provider finish_reason: content_filter");
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    let payload = r#"{"error":{"message":"Upstream overloaded","type":"server_error"}}"#;
    let (_, err) = failing(Reply::empty().with_part(Part::RawData(payload.into()))).await;
    assert_eq!(err.message, "Upstream overloaded");
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    let (_, err) = failing(Reply::empty().with_part(Part::RawData("{not json".into()))).await;
    assert_eq!(err.message, MALFORMED_EVENT_MESSAGE);
}

#[tokio::test]
async fn cancellation_mid_stream_aborts_promptly() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text_chunks(["one", "two"]).hang_after(1));
    let cancel = CancellationToken::new();
    let mut stream = provider().stream(request(model(&server, false), vec![user("hi")]), cancel.clone());
    // Read up to the first delta, then cancel.
    loop {
        match stream.next().await {
            Some(Ok(ProviderEvent::BlockDelta { .. })) => break,
            Some(Ok(_)) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
    let started = Instant::now();
    cancel.cancel();
    let next = stream.next().await;
    assert!(started.elapsed() < Duration::from_millis(500));
    match next {
        Some(Err(e)) => assert_eq!(e.kind, ProviderErrorKind::Aborted),
        other => panic!("expected an abort, got {other:?}"),
    }
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn missing_api_key_is_an_auth_error_without_a_request() {
    let server = FakeServer::start().await.unwrap();
    let mut req = request(model(&server, false), vec![user("hi")]);
    req.api_key = None;
    let (_, err) = run(req).await;
    let err = err.unwrap();
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.message, "No API key for provider: p");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn usage_and_finish_reason_mapping() {
    let u = parse_usage(&json!({"prompt_tokens": 50, "completion_tokens": 7, "prompt_cache_hit_tokens": 10,
        "prompt_tokens_details": {"cache_write_tokens": 5}}));
    assert_eq!((u.input, u.cache_read, u.cache_write, u.output, u.total_tokens), (35, 10, 5, 7, 57));
    assert_eq!(map_finish_reason("end"), Ok(StopReason::Stop));
    assert_eq!(map_finish_reason("function_call"), Ok(StopReason::ToolUse));
    assert_eq!(map_finish_reason("weird"), Err("Provider finish_reason: weird".into()));
}

#[tokio::test]
async fn requests_match_pi_captures() {
    use crate::provider::test_support::{fixture, keys};
    for name in [
        "completions_openrouter_cache",
        "completions_openrouter_off_null",
        "completions_baseten_template",
        "completions_chat_template_off",
    ] {
        let server = FakeServer::start().await.unwrap();
        let f = fixture(name, &server.url());
        server.push(Reply::text("ok"));
        let (_, err) = run(f.request).await;
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

#[tokio::test]
async fn openrouter_reasoning_details_become_the_thinking_signature() {
    let server = FakeServer::start().await.unwrap();
    let chunk = |delta: serde_json::Value| {
        json!({"id": "gen-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
            .to_string()
    };
    server.push(
        Reply::empty()
            .with_part(Part::RawData(chunk(json!({"reasoning": "Think", "reasoning_details": [
                {"type": "reasoning.text", "text": "Think", "format": "anthropic-claude-v1", "index": 0}]}))))
            .with_part(Part::RawData(chunk(json!({"reasoning_details": [
                {"type": "reasoning.text", "text": "ing", "signature": "s1", "index": 0}]}))))
            .with_part(Part::RawData(chunk(json!({"content": "Hi"})))),
    );
    let (events, err) = run(request(model(&server, true), vec![user("hi")])).await;
    assert_eq!(err, None);
    let signatures: Vec<&ProviderEvent> =
        events.iter().filter(|e| matches!(e, ProviderEvent::Signature { index: 0, .. })).collect();
    assert_eq!(signatures[0], &ProviderEvent::Signature { index: 0, signature: "reasoning".into() });
    assert_eq!(
        signatures.last().unwrap(),
        &&ProviderEvent::Signature {
            index: 0,
            signature: r#"[{"type":"reasoning.text","text":"Thinking","format":"anthropic-claude-v1","index":0,"signature":"s1"}]"#
                .into()
        }
    );
    let end = events.iter().position(|e| *e == ProviderEvent::BlockEnd { index: 0 }).unwrap();
    let last_sig = events.iter().rposition(|e| matches!(e, ProviderEvent::Signature { index: 0, .. })).unwrap();
    assert!(last_sig < end, "the signature is set before the block ends");
}

#[test]
fn off_is_not_clamped_up() {
    let mut m = crate::provider::convert::tests::model(false);
    m.reasoning = true;
    m.base_url = "https://api.openai.com/v1".into();
    m.thinking_level_map = json!({"off": null}).as_object().cloned();
    let mut req = request(m, vec![user("x")]);
    req.thinking_level = ThinkingLevel::Off;
    let body = crate::provider::openai::request::build_body(&req, &OpenAiCompat::resolve(&req.model));
    assert!(body.get("reasoning_effort").is_none(), "{body}");
}

/// An assembler for the chunk-reading tests, before any chunk.
fn plain_assembler() -> Assembler {
    Assembler::for_provider("p".into(), true)
}

/// The fast reading of plain text chunks emits what the general path emits,
/// and leaves every other shape to it.
#[test]
fn plain_chunks_read_fast_give_what_the_general_path_gives() {
    let fast = [
        r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Hi \"there\" \u00e9\n"},"finish_reason":null}]}"#,
        r#"{"choices":[{"delta":{"content":"more"}}]}"#,
        r#"{"id":"","choices":[{"delta":{},"finish_reason":"length"}]}"#,
        r#"{"id":"c1","choices":[{"delta":{},"finish_reason":"content_filter"}]}"#,
    ];
    let general = [
        r#"{"id":"c1","choices":[{"index":0,"delta":["x"]}]}"#,
        r#"{"id":"c1","choices":[["x"]]}"#,
        r#"["c1"]"#,
        r#"{"id":"c1","choices":[{"delta":{"content":"a","content":"b"}}]}"#,
        r#"{"id":"c1","choices":[{"delta":{"reasoning_content":"r","content":"a"}}]}"#,
        r#"{"id":"c1","choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        r#"{"id":"c1","choices":[{"delta":{"content":"a"},"usage":{"prompt_tokens":3}}]}"#,
        r#"{"id":"c1","choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#,
        r#"{"id":"c1","choices":[]}"#,
        r#"{"id":7,"choices":[{"delta":{"content":5}}]}"#,
        r#"{"id":"c1","choices":[{"delta":null,"finish_reason":"stop"}]}"#,
        r#"{"id":"c1","choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"bash","arguments":""}}]}}]}"#,
        r#"{"id":"c1","service_tier":"default","choices":[{"delta":{"content":"a"}}]}"#,
    ];
    let assembler = plain_assembler;
    for (chunks, expect_fast) in [(&fast[..], true), (&general[..], false)] {
        // Run each list as one stream, so the blocks' state carries over.
        let (mut quick, mut careful) = (assembler(), assembler());
        let (mut quick_out, mut careful_out) = (Out::default(), Out::default());
        for chunk in chunks {
            let value: Value = serde_json::from_str(chunk).unwrap();
            assert_eq!(quick.on_plain_chunk(chunk, &mut quick_out), expect_fast, "{chunk}");
            if !expect_fast {
                quick.on_chunk(&value, &mut quick_out);
            }
            careful.on_chunk(&value, &mut careful_out);
            assert_eq!(quick_out.take(), careful_out.take(), "{chunk}");
            assert_eq!(quick.finish, careful.finish, "{chunk}");
            assert_eq!(
                (quick.response_id, quick.text, quick.blocks),
                (careful.response_id, careful.text, careful.blocks)
            );
        }
    }
}

#[test]
fn chunks_read_by_their_frame_give_what_the_general_path_gives() {
    let head = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":"#;
    let tail = r#","logprobs":null,"finish_reason":null}],"usage":null}"#;
    let chunk = |delta: &str| format!("{head}{delta}{tail}");
    let mut chunks = vec![chunk(r#"{"role":"assistant","content":"","refusal":null}"#)];
    // (chunk, read by its frame)
    let mut expected = vec![false];
    for (delta, by_frame) in [
        (r#"{"content":"Hello"}"#, true),
        (r#"{"content":""}"#, true),
        (r#"{"content":" wörld ✓"}"#, true),
        (r#"{"content":"a\"quote\" and \n"}"#, false),
        (r#"{"content":"\u00e9"}"#, false),
        (r#"{"content":"x","content":"y"}"#, false),
        (r#"{"reasoning_content":"r"}"#, false),
        (r#"{"content":"after reasoning"}"#, true),
        (r#"{"content":null}"#, false),
        (r#"{"content":"last"}"#, true),
    ] {
        chunks.push(chunk(delta));
        expected.push(by_frame);
    }
    // A chunk with another frame (a finish reason, usage), then the old frame again.
    chunks.push(format!(r#"{head}{{"content":"end"}},"logprobs":null,"finish_reason":"stop"}}],"usage":null}}"#));
    expected.push(false);
    chunks.push(chunk(r#"{"content":"late"}"#));
    expected.push(true);
    chunks.push(format!(
        r#"{head}{{}},"logprobs":null,"finish_reason":null}}],"usage":{{"prompt_tokens":3,"completion_tokens":9}}}}"#
    ));
    expected.push(false);
    let assembler = plain_assembler;
    let (mut quick, mut careful) = (assembler(), assembler());
    let (mut quick_out, mut careful_out) = (Out::default(), Out::default());
    for (chunk, by_frame) in chunks.iter().zip(expected) {
        assert_eq!(quick.frame.text_of(chunk).is_some(), by_frame, "{chunk}");
        let value: Value = serde_json::from_str(chunk).unwrap();
        if !quick.on_plain_chunk(chunk, &mut quick_out) {
            quick.on_chunk(&value, &mut quick_out);
        }
        careful.on_chunk(&value, &mut careful_out);
        assert_eq!(quick_out.take(), careful_out.take(), "{chunk}");
        assert_eq!(quick.finish, careful.finish, "{chunk}");
        assert_eq!(
            (quick.response_id, quick.text, quick.thinking, quick.blocks),
            (careful.response_id, careful.text, careful.thinking, careful.blocks)
        );
    }
}

/// Usage counts of another JSON type read as absent beside the counts that
/// are numbers, in a `usage` read alone and in a chunk's.
#[test]
fn usage_with_odd_types_keeps_the_counts_it_can_read() {
    let u = parse_usage(&json!({"prompt_tokens": 50, "completion_tokens": "7",
        "prompt_tokens_details": {"cached_tokens": 10.5, "cache_write_tokens": 5}, "prompt_cache_hit_tokens": 4,
        "completion_tokens_details": [3], "reasoning_tokens": 2, "extra": {"x": 1}}));
    assert_eq!(
        (u.input, u.cache_read, u.cache_write, u.output, u.reasoning, u.total_tokens),
        (41, 4, 5, 0, Some(2), 50)
    );
    let u = parse_usage(&json!({"prompt_tokens": -3, "completion_tokens": 9, "prompt_tokens_details": null,
        "completion_tokens_details": {"reasoning_tokens": 4}, "cached_tokens": 1}));
    assert_eq!(
        (u.input, u.cache_read, u.cache_write, u.output, u.reasoning, u.total_tokens),
        (0, 1, 0, 9, Some(4), 10)
    );
    let mut assembler = plain_assembler();
    let mut out = Out::default();
    let chunk = json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": [1],
        "prompt_tokens_details": {"cached_tokens": 2, "cache_write_tokens": "1"}, "total_tokens": "x"}});
    assembler.on_chunk(&chunk, &mut out);
    let events: Vec<ProviderEvent> = out.take().into_iter().filter_map(Result::ok).collect();
    let u = crate::provider::test_support::last_usage(&events);
    assert_eq!(
        (u.input, u.cache_read, u.cache_write, u.output, u.reasoning, u.total_tokens),
        (10, 2, 0, 0, Some(0), 12)
    );
}
