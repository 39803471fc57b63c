//! Tests of `openai-responses`: request bodies and headers against pi
//! 1.6.0's captured requests, byte-level stream decoding (reasoning items,
//! text, parallel function calls, usage), faults through the fake server, and
//! the reasoning parameters per level.

use std::time::Duration;

use pi_fake_server::{FakeServer, FakeToolCall, Part, Reply};
use serde_json::{Value, json};

use super::*;
use crate::model::{Model, ModelCost, ThinkingLevel};
use crate::provider::driver::decode_bytes;
use crate::provider::http::STREAM_CUT_MESSAGE;
use crate::provider::openai::responses_request;
use crate::provider::test_support::{collect, deltas, fixture, keys, last_usage, simple_request};
use crate::provider::{BlockKind, ProviderErrorKind};

fn provider() -> OpenAiResponses {
    OpenAiResponses::new(HttpClient::new().unwrap())
}

fn model(base_url: &str, reasoning: bool) -> Model {
    Model {
        id: "gpt-test".into(),
        name: "GPT Test".into(),
        api: "openai-responses".into(),
        provider: "openai".into(),
        base_url: base_url.into(),
        reasoning,
        input: vec!["text".into(), "image".into()],
        context_window: 400_000,
        max_tokens: 128_000,
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
    for name in ["responses_high", "responses_off"] {
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

fn ev(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A documented-shape stream: a reasoning item with two summary parts, a
/// message, two function calls with split arguments, usage with cache reads.
fn stream_bytes() -> String {
    let reasoning_done = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAAB-enc",
        "summary": [{"type": "summary_text", "text": "First part."}, {"type": "summary_text", "text": "Second."}]});
    [
        ev("response.created", json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}})),
        ev("response.in_progress", json!({"type": "response.in_progress", "sequence_number": 1, "response": {"id": "resp_1"}})),
        ev("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": []}})),
        ev("response.reasoning_summary_part.added", json!({"type": "response.reasoning_summary_part.added",
            "item_id": "rs_1", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}})),
        ev("response.reasoning_summary_text.delta", json!({"type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "First part."})),
        ev("response.reasoning_summary_part.done", json!({"type": "response.reasoning_summary_part.done",
            "item_id": "rs_1", "output_index": 0, "summary_index": 0})),
        ev("response.reasoning_summary_text.delta", json!({"type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1", "output_index": 0, "summary_index": 1, "delta": "Second."})),
        ev("response.reasoning_summary_part.done", json!({"type": "response.reasoning_summary_part.done",
            "item_id": "rs_1", "output_index": 0, "summary_index": 1})),
        ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_done})),
        ev("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}})),
        ev("response.output_text.delta", json!({"type": "response.output_text.delta", "item_id": "msg_1",
            "output_index": 1, "content_index": 0, "delta": "Hello"})),
        ev("response.output_text.delta", json!({"type": "response.output_text.delta", "item_id": "msg_1",
            "output_index": 1, "content_index": 0, "delta": " world"})),
        ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 1,
            "item": {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello world", "annotations": []}]}})),
        ev("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 2,
            "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_a", "name": "bash"}})),
        ev("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta",
            "item_id": "fc_1", "output_index": 2, "delta": "{\"command\":"})),
        ev("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta",
            "item_id": "fc_1", "output_index": 2, "delta": "\"ls\"}"})),
        ev("response.function_call_arguments.done", json!({"type": "response.function_call_arguments.done",
            "item_id": "fc_1", "output_index": 2, "arguments": "{\"command\":\"ls\"}"})),
        ev("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 3,
            "item": {"id": "fc_2", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_b", "name": "read"}})),
        ev("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta",
            "item_id": "fc_2", "output_index": 3, "delta": "{\"path\":"})),
        ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 2,
            "item": {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": "{\"command\":\"ls\"}", "call_id": "call_a", "name": "bash"}})),
        ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 3,
            "item": {"id": "fc_2", "type": "function_call", "status": "completed", "arguments": "{\"path\":\"a.txt\"}", "call_id": "call_b", "name": "read"}})),
        ev("response.completed", json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
            "output": [], "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 800},
                "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 1050}}})),
    ]
    .concat()
}

#[test]
fn documented_stream_decodes_at_every_split() {
    let bytes = stream_bytes();
    let (events, err) = decode_bytes(Decoder::new(), bytes.as_bytes(), usize::MAX);
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::ResponseId("resp_1".into()));
    assert_eq!(events[1], ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking });
    // pi-ai's deltas: a blank line at each summary part's end; the item's end gives the summary's text.
    assert_eq!(deltas(&events, 0), vec!["First part.", "\n\n", "Second.", "\n\n"]);
    assert!(events.contains(&ProviderEvent::BlockText { index: 0, text: "First part.\n\nSecond.".into() }));
    let signature = events.iter().find_map(|e| match e {
        ProviderEvent::Signature { index: 0, signature } => Some(signature.clone()),
        _ => None,
    });
    assert_eq!(
        signature.as_deref(),
        Some(
            r#"{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAAB-enc","summary":[{"type":"summary_text","text":"First part."},{"type":"summary_text","text":"Second."}]}"#
        )
    );
    assert_eq!(deltas(&events, 1).concat(), "Hello world");
    assert!(events.contains(&ProviderEvent::Signature { index: 1, signature: r#"{"v":1,"id":"msg_1"}"#.into() }));
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 2,
        kind: BlockKind::ToolCall { id: "call_a|fc_1".into(), name: "bash".into() }
    }));
    assert_eq!(deltas(&events, 2).concat(), r#"{"command":"ls"}"#);
    // The rest of the second call's arguments only came with its done item.
    assert_eq!(deltas(&events, 3), vec![r#"{"path":"#, r#""a.txt"}"#]);
    let u = last_usage(&events);
    assert_eq!((u.input, u.cache_read, u.output, u.total_tokens), (200, 800, 50, 1050));
    assert_eq!(u.reasoning, Some(20));
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("completed".into()) })
    );
    for piece in [1, 3, 17] {
        assert_eq!(decode_bytes(Decoder::new(), bytes.as_bytes(), piece), (events.clone(), None), "piece {piece}");
    }
}

#[test]
fn stream_faults_have_pi_texts() {
    let created = ev("response.created", json!({"type": "response.created", "response": {"id": "resp_1"}}));
    let decode = |tail: String| decode_bytes(Decoder::new(), format!("{created}{tail}").as_bytes(), 7);
    let (_, err) = decode(String::new());
    assert_eq!(err.unwrap().message, NO_TERMINAL_EVENT_MESSAGE);
    let (_, err) =
        decode(ev("error", json!({"type": "error", "code": "server_error", "message": "boom", "param": null})));
    assert_eq!(err.unwrap().message, "boom");
    let (_, err) =
        decode("data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}\n\n".to_string());
    let err = err.unwrap();
    assert_eq!(err.message, "Error Code rate_limit_exceeded: slow down");
    assert_eq!(err.kind, ProviderErrorKind::RateLimited { retry_after: None });
    let failed = json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
        "error": {"code": "server_error", "message": "The server had an error"}}});
    let (_, err) = decode(ev("response.failed", failed));
    let err = err.unwrap();
    assert_eq!(
        (err.message.as_str(), err.kind),
        ("server_error: The server had an error", ProviderErrorKind::Transient)
    );
    let (_, err) = decode("event: response.output_text.delta\ndata: {\"type\":\n\n".to_string());
    assert_eq!(err.unwrap().message, MALFORMED_EVENT_MESSAGE);
    let incomplete = |reason: &str| {
        ev(
            "response.incomplete",
            json!({"type": "response.incomplete",
            "response": {"id": "r", "status": "incomplete", "incomplete_details": {"reason": reason}}}),
        )
    };
    let (events, err) = decode(incomplete("max_output_tokens"));
    assert_eq!(err, None);
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Stop { reason: StopReason::Length, raw: Some("incomplete.max_output_tokens".into()) })
    );
    let (_, err) = decode(incomplete("content_filter"));
    assert_eq!(err.unwrap().message, "Response incomplete: content_filter");
    let unfinished = [
        ev(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "fc_1", "type": "function_call", "arguments": "", "call_id": "call_1", "name": "bash"}}),
        ),
        ev("response.completed", json!({"type": "response.completed", "response": {"id": "r", "status": "completed"}})),
    ]
    .concat();
    let (_, err) = decode(unfinished);
    assert_eq!(
        err.unwrap().message,
        "OpenAI Responses stream completed with an unfinished tool call: bash (call_1|fc_1)"
    );
}

#[test]
fn encrypted_reasoning_is_backfilled_from_the_completed_response() {
    let tail = [
        ev(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "rs_9", "type": "reasoning", "summary": []}}),
        ),
        ev(
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "r", "status": "completed",
            "output": [{"id": "rs_9", "type": "reasoning", "summary": [], "encrypted_content": "ENC"}]}}),
        ),
    ]
    .concat();
    let (events, err) = decode_bytes(Decoder::new(), tail.as_bytes(), 100);
    assert_eq!(err, None);
    let signatures: Vec<&ProviderEvent> =
        events.iter().filter(|e| matches!(e, ProviderEvent::Signature { .. })).collect();
    assert_eq!(
        signatures.last(),
        Some(&&ProviderEvent::Signature {
            index: 0,
            signature: r#"{"id":"rs_9","type":"reasoning","summary":[],"encrypted_content":"ENC"}"#.into()
        })
    );
}

#[tokio::test]
async fn fake_server_stream_with_reasoning_and_tools() {
    let server = FakeServer::start().await.unwrap();
    server.push(
        Reply::text("Done.")
            .with_thinking("Plan it")
            .with_tool_call(FakeToolCall::new("call_a", "bash", r#"{"command":"echo hi"}"#).pieces(3))
            .with_tool_call(FakeToolCall::new("call_b", "read", r#"{"path":"x.txt"}"#).pieces(2))
            .id("resp_7")
            .usage(120, 30, 100),
    );
    let (events, err) =
        collect(&provider(), simple_request(model(&server.base_url(), true), "go"), CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(events[0], ProviderEvent::ResponseId("resp_7".into()));
    // pi-ai's deltas (a blank line at the summary part's end), then the item's text in their place.
    assert_eq!(deltas(&events, 0).concat(), "Plan it\n\n");
    assert!(events.contains(&ProviderEvent::BlockText { index: 0, text: "Plan it".into() }));
    assert_eq!(deltas(&events, 1).concat(), "Done.");
    assert_eq!(deltas(&events, 2).concat(), r#"{"command":"echo hi"}"#);
    assert_eq!(deltas(&events, 3).concat(), r#"{"path":"x.txt"}"#);
    let u = last_usage(&events);
    assert_eq!((u.input, u.cache_read, u.output), (20, 100, 30));
    assert_eq!(
        events.last(),
        Some(&ProviderEvent::Stop { reason: StopReason::ToolUse, raw: Some("completed".into()) })
    );
}

async fn failing(reply: Reply) -> (Vec<ProviderEvent>, ProviderError) {
    let server = FakeServer::start().await.unwrap();
    server.push(reply);
    let (events, err) =
        collect(&provider(), simple_request(model(&server.base_url(), false), "hi"), CancellationToken::new()).await;
    (events, err.expect("an error"))
}

#[tokio::test]
async fn http_errors_have_pi_texts() {
    let (_, err) = failing(Reply::openai_error(500, "The server had an error", "server_error")).await;
    assert_eq!(
        err.message,
        r#"OpenAI API error (500): {"message":"The server had an error","type":"server_error","param":null,"code":null}"#
    );
    assert_eq!(err.kind, ProviderErrorKind::Transient);
    let (_, err) = failing(Reply::openai_error(429, "Rate limit reached", "requests").header("retry-after", "3")).await;
    assert_eq!(err.kind, ProviderErrorKind::RateLimited { retry_after: Some(Duration::from_secs(3)) });
    let (_, err) = failing(Reply::error(502, "Bad Gateway")).await;
    assert_eq!(err.message, "OpenAI API error (502): 502 Bad Gateway");
    let (_, err) = failing(Reply::openai_error(401, "Incorrect API key provided", "invalid_request_error")).await;
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    let body = json!({"error": {"message": "Your input exceeds the context window of this model.",
        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}});
    let (_, err) = failing(Reply::error(400, body.to_string())).await;
    assert_eq!(err.kind, ProviderErrorKind::ContextOverflow);
    let (_, err) = failing(Reply::anthropic_error(529, "overloaded_error", "Overloaded")).await;
    assert_eq!(err.message, r#"OpenAI API error (529): {"type":"overloaded_error","message":"Overloaded"}"#);
    assert_eq!(err.kind, ProviderErrorKind::Transient);
}

#[tokio::test]
async fn cut_and_unfinished_streams() {
    let (events, err) = failing(Reply::text_chunks(["par", "tial", "never"]).cut_after(2)).await;
    assert_eq!((err.message.as_str(), err.kind), (STREAM_CUT_MESSAGE, ProviderErrorKind::Transient));
    assert_eq!(deltas(&events, 0), vec!["par", "tial"]);
    let (_, err) = failing(Reply::text("hello").without_finish_reason()).await;
    assert_eq!((err.message.as_str(), err.kind), (NO_TERMINAL_EVENT_MESSAGE, ProviderErrorKind::Transient));
    let (_, err) = failing(Reply::text("x").with_part(Part::RawData("{oops".into()))).await;
    assert_eq!(err.message, MALFORMED_EVENT_MESSAGE);
}

fn body_for(mut model: Model, level: ThinkingLevel) -> Value {
    model.base_url = "http://127.0.0.1:1/v1".into();
    let mut req = simple_request(model, "hi");
    req.thinking_level = level;
    responses_request::build_body(&req)
}

#[test]
fn reasoning_parameters_per_level() {
    let m = model("", true);
    let off = body_for(m.clone(), ThinkingLevel::Off);
    assert_eq!(off["reasoning"], json!({"effort": "none"}));
    assert!(off.get("include").is_none());
    let high = body_for(m.clone(), ThinkingLevel::High);
    assert_eq!(high["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(high["include"], json!(["reasoning.encrypted_content"]));
    // Levels the model lacks are clamped; xhigh only where mapped.
    assert_eq!(body_for(m.clone(), ThinkingLevel::Xhigh)["reasoning"]["effort"], "high");
    let mut mapped = m.clone();
    mapped.thinking_level_map = json!({"off": null, "minimal": null, "xhigh": "xhigh"}).as_object().cloned();
    assert!(body_for(mapped.clone(), ThinkingLevel::Off).get("reasoning").is_none());
    assert_eq!(body_for(mapped.clone(), ThinkingLevel::Minimal)["reasoning"]["effort"], "low");
    assert_eq!(body_for(mapped, ThinkingLevel::Xhigh)["reasoning"]["effort"], "xhigh");
    let plain = body_for(model("", false), ThinkingLevel::High);
    assert!(plain.get("reasoning").is_none() && plain.get("include").is_none());
    let mut xai = model("", true);
    xai.provider = "xai".into();
    assert_eq!(body_for(xai, ThinkingLevel::Off)["include"], json!(["reasoning.encrypted_content"]));
}

#[test]
fn managed_effort_and_additional_tools() {
    let mut m = model("", true);
    m.compat = json!({"supportsMidConvoEffort": true, "supportsMidConvoSystemMessages": true,
        "supportsAdditionalTools": true, "supportsStrictMode": true})
    .as_object()
    .cloned();
    let body = body_for(m, ThinkingLevel::Low);
    assert_eq!(body["reasoning"]["effort"], "medium");
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[0]["type"], "additional_tools");
    assert_eq!(input[0]["tools"][0]["strict"], true, "bash prefers a strict schema");
    assert_eq!(input[1]["role"], "developer");
    assert_eq!(input.last().unwrap(), &json!({"type": "configuration_update", "reasoning": {"effort": "low"}}));
    assert!(body.get("tools").is_none());
}

#[tokio::test]
async fn missing_key_and_session_headers() {
    let server = FakeServer::start().await.unwrap();
    let mut req = simple_request(model(&server.base_url(), false), "hi");
    req.api_key = None;
    let (_, err) = collect(&provider(), req.clone(), CancellationToken::new()).await;
    assert_eq!(err.unwrap().message, "No API key for provider: openai");
    assert_eq!(server.request_count(), 0);
    req.api_key = Some("sk-x".into());
    req.model.provider = "openrouter".into();
    req.session_id = Some("s-1".into());
    server.push(Reply::text("ok"));
    let _ = collect(&provider(), req, CancellationToken::new()).await;
    let r = &server.requests()[0];
    assert_eq!(r.header("x-session-id"), Some("s-1"));
    assert_eq!(r.header("session-id"), None);
    assert_eq!(r.body["prompt_cache_key"], "s-1");
}

/// pi's `mapCodexEvents`: an `error` is worded from its `message`, else its
/// `code` (a string at the top wins, even empty; else the one in `error`; else
/// the whole event), `response.failed` from the response's error message,
/// `response.done` ends the stream as `response.completed` with an unknown
/// status dropped, and an event without a string `type` is skipped.
#[test]
fn codex_events_are_mapped_as_pi_maps_them() {
    let decode = |events: &[Value]| {
        let bytes: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        decode_bytes(Decoder::codex(), bytes.as_bytes(), 5)
    };
    let error_of = |event: Value| decode(&[event]).1.map(|e| e.message);
    let nested = json!({"message": "nested message", "code": "nested_code"});
    assert_eq!(
        error_of(json!({"type": "error", "message": "top", "error": nested})).as_deref(),
        Some("Codex error: top")
    );
    assert_eq!(
        error_of(json!({"type": "error", "message": 5, "error": nested})).as_deref(),
        Some("Codex error: nested message")
    );
    assert_eq!(
        error_of(json!({"type": "error", "message": "", "code": "top_code", "error": nested})).as_deref(),
        Some("Codex error: top_code")
    );
    assert_eq!(
        error_of(json!({"type": "error", "message": null, "error": {"code": "only_code"}})).as_deref(),
        Some("Codex error: only_code")
    );
    let bare = json!({"type": "error", "error": ["not", "an", "object"], "code": ""});
    assert_eq!(error_of(bare.clone()), Some(format!("Codex error: {}", js_json(&bare))));
    assert_eq!(
        error_of(json!({"type": "response.failed", "response": {"error": {"message": "quota"}}})).as_deref(),
        Some("quota")
    );
    for response in [json!({"error": {"message": ""}}), json!({"error": "x"}), json!([1]), json!(null)] {
        assert_eq!(
            error_of(json!({"type": "response.failed", "response": response})).as_deref(),
            Some("Codex response failed")
        );
    }
    let text =
        |delta: &str, index: u64| json!({"type": "response.output_text.delta", "output_index": index, "delta": delta});
    let added = json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "msg_1", "type": "message", "content": []}});
    for (status, raw) in [
        (json!("weird"), None),
        (json!(7), None),
        (json!("completed"), Some("completed")),
        (json!("in_progress"), Some("in_progress")),
    ] {
        for kind in ["response.done", "response.completed", "response.incomplete"] {
            let done = json!({"type": kind, "response": {"status": status,
                "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}});
            let skipped = [json!({"no_type": 1}), json!({"type": 4, "delta": "x"}), json!([{"type": "error"}])];
            let mut stream = vec![added.clone(), text("Hi", 0)];
            stream.extend(skipped);
            stream.extend([done, text("after the end", 0)]);
            let (events, err) = decode(&stream);
            assert_eq!(err, None, "{kind} {status}");
            assert_eq!(deltas(&events, 0).concat(), "Hi", "{kind} {status}");
            assert_eq!((last_usage(&events).input, last_usage(&events).output), (3, 2));
            assert_eq!(
                events.last(),
                Some(&ProviderEvent::Stop { reason: StopReason::Stop, raw: raw.map(str::to_string) }),
                "{kind} {status}"
            );
        }
    }
    let (events, err) = decode(&[added, json!({"type": "response.done", "response": "gone"})]);
    assert_eq!((events.last(), err), (Some(&ProviderEvent::Stop { reason: StopReason::Stop, raw: None }), None));
}

/// Usage counts of another JSON type read as absent beside the counts that are numbers.
#[test]
fn usage_with_odd_types_keeps_the_counts_it_can_read() {
    let usage = |u: Value| {
        let done = json!({"type": "response.completed", "response": {"status": "completed", "usage": u}});
        let u = last_usage(&decode_bytes(Decoder::new(), ev("response.completed", done).as_bytes(), 9).0);
        (u.input, u.cache_read, u.cache_write, u.output, u.reasoning, u.total_tokens)
    };
    assert_eq!(
        usage(json!({"input_tokens": 100, "output_tokens": "20", "total_tokens": 120,
            "input_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 2.5},
            "output_tokens_details": {"reasoning_tokens": "4"}, "extra": {"a": 1}})),
        (70, 30, 0, 0, Some(0), 120)
    );
    assert_eq!(
        usage(json!({"input_tokens": -1, "output_tokens": 7, "total_tokens": null,
            "input_tokens_details": [30], "output_tokens_details": {"reasoning_tokens": 3}})),
        (0, 0, 0, 7, Some(3), 0)
    );
}
