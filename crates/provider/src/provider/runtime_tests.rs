//! pi-ai events to the core's: full streams, streams that leave parts out,
//! and the errors that must never become an empty message.

use futures::StreamExt;
use serde_json::{Value, json};

use super::*;

/// Map `events`, then the end of the source.
fn map_all(events: &[Value]) -> Vec<Result<ProviderEvent, ProviderError>> {
    let mut mapper = PiEventMapper::new("custom (custom-api)".into());
    let mut out = Vec::new();
    for event in events {
        out.extend(mapper.map(event));
    }
    out.extend(mapper.end());
    out
}

fn ok(events: &[Result<ProviderEvent, ProviderError>]) -> Vec<ProviderEvent> {
    events.iter().map(|e| e.clone().expect("no error")).collect()
}

fn done(reason: &str, content: Value) -> Value {
    json!({"type": "done", "reason": reason, "message": {
        "role": "assistant", "content": content, "stopReason": reason, "responseId": "resp_1",
        "usage": {"input": 12, "output": 5, "cacheRead": 2, "cacheWrite": 0, "totalTokens": 19,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}})
}

#[test]
fn a_full_stream_with_a_tool_call_maps_event_for_event() {
    let call = json!({"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.txt"}});
    let events = map_all(&[
        json!({"type": "start"}),
        json!({"type": "thinking_start", "contentIndex": 0}),
        json!({"type": "thinking_delta", "contentIndex": 0, "delta": "hm"}),
        json!({"type": "thinking_end", "contentIndex": 0, "content": "hm", "signature": "sig"}),
        json!({"type": "text_start", "contentIndex": 1}),
        json!({"type": "text_delta", "contentIndex": 1, "delta": "Hel"}),
        json!({"type": "text_delta", "contentIndex": 1, "delta": "lo"}),
        json!({"type": "text_end", "contentIndex": 1, "content": "Hello"}),
        json!({"type": "toolcall_start", "contentIndex": 2, "id": "call_1", "toolName": "read"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"path\":"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "\"a.txt\"}"}),
        json!({"type": "toolcall_end", "contentIndex": 2, "toolCall": call}),
        done("toolUse", json!([{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Hello"}, call])),
    ]);
    let usage = Usage { input: 12, output: 5, cache_read: 2, total_tokens: 19, ..Default::default() };
    let tool = BlockKind::ToolCall { id: "call_1".into(), name: "read".into() };
    let delta = |index, delta: &str| ProviderEvent::BlockDelta { index, delta: delta.into() };
    assert_eq!(
        ok(&events),
        vec![
            ProviderEvent::Opened,
            ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking },
            delta(0, "hm"),
            ProviderEvent::Signature { index: 0, signature: "sig".into() },
            ProviderEvent::BlockEnd { index: 0 },
            ProviderEvent::BlockStart { index: 1, kind: BlockKind::Text },
            delta(1, "Hel"),
            delta(1, "lo"),
            ProviderEvent::BlockEnd { index: 1 },
            ProviderEvent::BlockStart { index: 2, kind: tool },
            delta(2, "{\"path\":"),
            delta(2, "\"a.txt\"}"),
            ProviderEvent::BlockEnd { index: 2 },
            ProviderEvent::ResponseId("resp_1".into()),
            ProviderEvent::Usage(Box::new(usage)),
            ProviderEvent::Stop { reason: StopReason::ToolUse, raw: None },
        ]
    );
}

#[test]
fn what_a_stream_leaves_out_is_taken_from_the_ends_and_the_final_message() {
    let call = json!({"type": "toolCall", "id": "c9", "name": "bash", "arguments": {"command": "ls"}});
    // No starts, no deltas for the text; a tool call whose id only the end knows.
    let events = ok(&map_all(&[
        json!({"type": "text_end", "contentIndex": 0, "content": "Hi"}),
        json!({"type": "toolcall_start", "contentIndex": 1}),
        json!({"type": "toolcall_end", "contentIndex": 1, "toolCall": call}),
        json!({"type": "done", "reason": "toolUse", "message": {"content": [
            {"type": "text", "text": "Hi"}, call, {"type": "text", "text": "late"}]}}),
    ]));
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::BlockDelta { index: 0, delta } => Some(delta.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hi");
    assert!(events.contains(&ProviderEvent::BlockStart {
        index: 1,
        kind: BlockKind::ToolCall { id: "c9".into(), name: "bash".into() }
    }));
    assert!(events.contains(&ProviderEvent::BlockDelta { index: 1, delta: "{\"command\":\"ls\"}".into() }));
    // A block only the final message has is streamed from it.
    assert!(events.contains(&ProviderEvent::BlockDelta { index: 2, delta: "late".into() }));
    let ends = events.iter().filter(|e| matches!(e, ProviderEvent::BlockEnd { .. })).count();
    assert_eq!(ends, 3, "each block ends once: {events:?}");
    assert!(matches!(events.last(), Some(ProviderEvent::Stop { reason: StopReason::ToolUse, .. })));
}

#[test]
fn errors_and_unreadable_streams_fail_clearly() {
    let failed = map_all(&[json!({"type": "error", "reason": "error", "error": {
        "stopReason": "error", "errorMessage": "429 rate limit exceeded", "content": []}})]);
    let error = failed.last().unwrap().clone().unwrap_err();
    assert!(matches!(error.kind, ProviderErrorKind::RateLimited { .. }), "{error:?}");
    assert_eq!(error.message, "429 rate limit exceeded");

    let aborted = map_all(&[json!({"type": "error", "reason": "aborted", "error": {"errorMessage": "stop"}})]);
    assert_eq!(aborted.last().unwrap().clone().unwrap_err().kind, ProviderErrorKind::Aborted);

    let unknown = map_all(&[json!({"type": "start"}), json!({"type": "text_chunk", "text": "x"})]);
    let error = unknown.last().unwrap().clone().unwrap_err();
    assert!(error.message.contains("no known type") && error.message.contains("text_chunk"), "{}", error.message);

    let cut = map_all(&[json!({"type": "text_delta", "contentIndex": 0, "delta": "par"})]);
    let error = cut.last().unwrap().clone().unwrap_err();
    assert!(error.message.contains("without a `done` or `error`"), "{}", error.message);

    let nameless = map_all(&[json!({"type": "done", "reason": "paused", "message": {"content": []}})]);
    assert!(nameless.last().unwrap().is_err());
    // Nothing comes after the first error.
    let mut mapper = PiEventMapper::new("x".into());
    assert!(mapper.map(&json!({"nope": 1})).last().unwrap().is_err());
    assert!(mapper.map(&done("stop", json!([]))).is_empty());
}

struct Canned(Vec<Value>);

impl PiEventSource for Canned {
    fn open(&self, api: &str, request: ProviderRequest, _cancel: CancellationToken) -> PiEventStream {
        assert_eq!((api, request.model.id.as_str()), ("custom-api", "m1"));
        futures::stream::iter(self.0.clone().into_iter().map(Ok)).boxed()
    }
}

#[tokio::test]
async fn the_provider_streams_its_sources_events_under_its_runtime_name() {
    let source = Canned(vec![
        json!({"type": "text_delta", "contentIndex": 0, "delta": "ok"}),
        done("stop", json!([{"type": "text", "text": "ok"}])),
    ]);
    let provider = RuntimeProvider::new("custom-api", Arc::new(source));
    assert_eq!(provider.api(), "custom-api");
    let request = request_for("m1", "custom", "custom-api");
    let events: Vec<_> = provider.stream(request, CancellationToken::new()).collect().await;
    let events = ok(&events);
    assert_eq!(events.first(), Some(&ProviderEvent::Opened));
    assert!(events.contains(&ProviderEvent::BlockDelta { index: 0, delta: "ok".into() }));
    assert_eq!(events.last(), Some(&ProviderEvent::Stop { reason: StopReason::Stop, raw: None }));
}

/// Records the API each call is opened with.
struct ApiLog(std::sync::Mutex<Vec<String>>);

impl PiEventSource for ApiLog {
    fn open(&self, api: &str, _request: ProviderRequest, _cancel: CancellationToken) -> PiEventStream {
        self.0.lock().unwrap().push(api.to_string());
        futures::stream::iter([Ok(done("stop", json!([])))]).boxed()
    }
}

#[tokio::test]
async fn a_providers_own_stream_serves_each_of_its_models_under_the_models_api() {
    let log = Arc::new(ApiLog(Default::default()));
    let mut registry = crate::provider::ProviderRegistry::default();
    registry.register_provider_stream("multi", None, Arc::new(RuntimeProvider::new("multi-a", log.clone())));
    for api in ["multi-a", "multi-b", "openai-completions"] {
        let provider = registry.for_model("multi", api).expect("the provider's stream");
        let _: Vec<_> = provider.stream(request_for("m", "multi", api), CancellationToken::new()).collect().await;
    }
    assert_eq!(*log.0.lock().unwrap(), ["multi-a", "multi-b", "openai-completions"]);
    // Another provider's model of the same API does not reach it.
    assert!(registry.for_model("other", "multi-b").is_none());
    registry.unregister_provider_stream("multi");
    assert!(registry.for_model("multi", "multi-a").is_none());
    // A config form's stream serves the provider's models of its API only.
    registry.register_provider_stream("shadow", Some("shadow-api"), Arc::new(RuntimeProvider::new("shadow-api", log)));
    assert!(registry.for_model("shadow", "shadow-api").is_some());
    assert!(registry.for_model("shadow", "multi-b").is_none());
    assert!(registry.for_model("fake", "shadow-api").is_none());
}

/// An empty request for the model `id` of `provider`, spoken with `api`.
fn request_for(id: &str, provider: &str, api: &str) -> ProviderRequest {
    let model = crate::model::Model {
        id: id.into(),
        provider: provider.into(),
        api: api.into(),
        ..crate::provider::faux::faux_model()
    };
    ProviderRequest {
        model,
        system_prompt: String::new(),
        messages: Vec::new(),
        tools: Vec::new(),
        thinking_level: crate::model::ThinkingLevel::Off,
        api_key: None,
        headers: Default::default(),
        max_tokens: None,
        session_id: None,
        credential: None,
        env: Default::default(),
        api_options: Default::default(),
    }
}
