//! Codex's WebSocket transport against the fake server's WebSocket route:
//! the handshake and message pi sends, continuations with
//! `previous_response_id`, the retry of a lost continuation, and the SSE
//! fallback of a session whose socket fails.

use std::sync::Arc;

use base64::Engine;
use pi_fake_server::{FakeServer, RecordedRequest, Reply};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::message::AgentMessage;
use crate::model::{Model, ModelCost};
use crate::provider::http::HttpClient;
use crate::provider::openai::codex::OpenAiCodexResponses;
use crate::provider::openai::codex_ws::Sessions;
use crate::provider::test_support::{collect, simple_request};
use crate::provider::{Provider, ProviderRequest};

fn token() -> String {
    let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    let claims = json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-ws"}});
    format!("{}.{}.sig", b64(b"{\"alg\":\"none\"}"), b64(claims.to_string().as_bytes()))
}

fn model(base_url: &str) -> Model {
    Model {
        id: "gpt-codex".into(),
        name: "GPT Codex".into(),
        api: "openai-codex-responses".into(),
        provider: "openai-codex".into(),
        base_url: base_url.into(),
        reasoning: false,
        input: vec!["text".into()],
        context_window: 272_000,
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

fn request(server: &FakeServer, session: Option<&str>) -> ProviderRequest {
    let mut r = simple_request(model(&format!("{}/backend-api", server.url())), "List the files.");
    r.api_key = Some(token());
    r.session_id = session.map(str::to_string);
    r
}

/// The answer as the agent keeps it, then the tool's result: the next call's conversation.
async fn answered(provider: Arc<dyn Provider>, mut r: ProviderRequest) -> ProviderRequest {
    let model = r.model.clone();
    let outcome =
        crate::stream::stream_assistant(None, provider, r.clone(), CancellationToken::new(), &model, None).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let call_id = outcome
        .message
        .content
        .iter()
        .find_map(|b| match b {
            crate::message::ContentBlock::ToolCall(c) => Some(c.id.clone()),
            _ => None,
        })
        .expect("a tool call");
    r.messages.push(AgentMessage::Assistant(outcome.message));
    let result = json!({"role": "toolResult", "toolCallId": call_id, "toolName": "bash",
        "content": [{"type": "text", "text": "a.txt"}], "isError": false, "timestamp": 2});
    r.messages.push(serde_json::from_value(result).unwrap());
    r
}

fn methods(requests: &[RecordedRequest]) -> Vec<String> {
    requests.iter().map(|r| r.method.clone()).collect()
}

#[tokio::test]
async fn a_session_keeps_its_socket_and_sends_only_the_new_items() {
    let server = FakeServer::start().await.unwrap();
    server.accept_websockets();
    server.push(Reply::tool_call("call_1", "bash", r#"{"command":"ls"}"#).id("resp_first"));
    server.push(Reply::text("Done."));
    let provider: Arc<dyn Provider> = Arc::new(OpenAiCodexResponses::new(HttpClient::new().unwrap()));
    let next = answered(provider.clone(), request(&server, Some("session-ws"))).await;
    let (_, err) = collect(provider.as_ref(), next, CancellationToken::new()).await;
    assert_eq!(err, None);

    let requests = server.requests();
    assert_eq!(methods(&requests), ["WEBSOCKET", "WEBSOCKET"]);
    let first = &requests[0];
    assert_eq!(first.path, "/backend-api/codex/responses");
    assert_eq!(first.header("authorization"), Some(format!("Bearer {}", token()).as_str()));
    assert_eq!(first.header("chatgpt-account-id"), Some("acct-ws"));
    assert_eq!(first.header("openai-beta"), Some("responses_websockets=2026-02-06"));
    assert_eq!(first.header("session-id"), Some("session-ws"));
    assert_eq!(first.header("x-client-request-id"), Some("session-ws"));
    assert_eq!(first.header("originator"), Some("pi"));
    assert_eq!(first.header("accept"), None);
    assert_eq!(first.header("content-encoding"), None);
    assert_eq!(first.body["type"], "response.create");
    assert_eq!(first.body["model"], "gpt-codex");
    assert_eq!(first.body["store"], false);
    assert!(first.body.get("previous_response_id").is_none());
    let first_input = first.body["input"].as_array().unwrap().len();

    // The second call continues the first answer: only the tool's result goes.
    let second = &requests[1];
    assert_eq!(second.body["previous_response_id"], "resp_first");
    let types: Vec<&str> =
        second.body["input"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap_or("")).collect();
    assert_eq!(types, ["function_call_output"]);
    assert!(first_input >= 2);
}

/// pi closes a session's socket left idle for 5 minutes (its
/// `scheduleSessionWebSocketExpiry`: code 1000, `idle_timeout`); pi cannot
/// be pointed at a 5-minute wait here, so this follows pi-ai's source, with
/// a short limit. The socket is then gone: the next call opens a new one.
#[tokio::test]
async fn an_idle_socket_is_closed_by_its_timer_as_pi_closes_it() {
    let server = FakeServer::start().await.unwrap();
    server.accept_websockets();
    server.push(Reply::tool_call("call_1", "bash", r#"{"command":"ls"}"#).id("resp_first"));
    server.push(Reply::text("Done."));
    let sessions = Sessions::with_idle_limit(std::time::Duration::from_millis(200));
    let provider: Arc<dyn Provider> =
        Arc::new(OpenAiCodexResponses::with_sessions(HttpClient::new().unwrap(), sessions));
    let next = answered(provider.clone(), request(&server, Some("session-idle"))).await;
    // Waits for the server to see the close (no timing is asserted).
    for _ in 0..200 {
        if !server.websocket_endings().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(server.websocket_endings(), ["1000 idle_timeout"]);
    let (_, err) = collect(provider.as_ref(), next, CancellationToken::new()).await;
    assert_eq!(err, None);
    let requests = server.requests();
    assert_eq!(methods(&requests), ["WEBSOCKET", "WEBSOCKET"]);
    assert!(requests[1].body.get("previous_response_id").is_none(), "a new socket: the whole input again");
}

#[tokio::test]
async fn a_lost_continuation_is_sent_again_whole() {
    let server = FakeServer::start().await.unwrap();
    server.accept_websockets();
    server.push(Reply::tool_call("call_1", "bash", r#"{"command":"ls"}"#).id("resp_first"));
    server.push(Reply::error(400, r#"{"error":{"code":"previous_response_not_found","message":"gone"}}"#));
    server.push(Reply::text("Done."));
    let provider: Arc<dyn Provider> = Arc::new(OpenAiCodexResponses::new(HttpClient::new().unwrap()));
    let next = answered(provider.clone(), request(&server, Some("session-lost"))).await;
    let whole = next.messages.len();
    let (_, err) = collect(provider.as_ref(), next, CancellationToken::new()).await;
    assert_eq!(err, None);
    let requests = server.requests();
    assert_eq!(methods(&requests), ["WEBSOCKET", "WEBSOCKET", "WEBSOCKET"]);
    assert_eq!(requests[1].body["previous_response_id"], "resp_first");
    assert!(requests[2].body.get("previous_response_id").is_none());
    assert!(requests[2].body["input"].as_array().unwrap().len() >= whole);
}

#[tokio::test]
async fn a_refused_upgrade_moves_the_session_to_sse() {
    let server = FakeServer::start().await.unwrap();
    server.push(Reply::text("one"));
    server.push(Reply::text("two"));
    let provider = OpenAiCodexResponses::new(HttpClient::new().unwrap());
    for _ in 0..2 {
        let (_, err) = collect(&provider, request(&server, Some("session-sse")), CancellationToken::new()).await;
        assert_eq!(err, None);
    }
    let requests = server.requests();
    // One upgrade attempt (404), then SSE only, zstd-compressed as pi sends it.
    assert_eq!(methods(&requests), ["GET", "POST", "POST"]);
    assert_eq!(requests[0].header("upgrade"), Some("websocket"));
    assert_eq!(requests[1].header("content-encoding"), Some("zstd"));
    assert_eq!(requests[1].body["model"], "gpt-codex");
}

#[tokio::test]
async fn a_socket_lost_mid_answer_fails_the_call_and_the_session_moves_to_sse() {
    let server = FakeServer::start().await.unwrap();
    server.accept_websockets();
    server.push(Reply::text_chunks(["Hello", " there", " friend"]).cut_after(1));
    server.push(Reply::text("again"));
    let provider = OpenAiCodexResponses::new(HttpClient::new().unwrap());
    let (events, err) = collect(&provider, request(&server, Some("session-cut")), CancellationToken::new()).await;
    let err = err.expect("the cut answer fails");
    assert!(err.message.contains("WebSocket"), "{err:?}");
    assert!(!events.is_empty(), "the answer had begun");
    let (_, err) = collect(&provider, request(&server, Some("session-cut")), CancellationToken::new()).await;
    assert_eq!(err, None);
    assert_eq!(methods(&server.requests()), ["WEBSOCKET", "POST"]);
}

#[tokio::test]
async fn api_errors_over_the_socket_fail_the_call_without_a_fallback() {
    let server = FakeServer::start().await.unwrap();
    server.accept_websockets();
    let limit = json!({"error": {"code": "usage_limit_reached", "message": "The usage limit has been reached"}});
    server.push(Reply::error(429, limit.to_string()));
    let provider = OpenAiCodexResponses::new(HttpClient::new().unwrap());
    let (_, err) = collect(&provider, request(&server, None), CancellationToken::new()).await;
    let err = err.expect("an error");
    assert!(err.message.contains("The usage limit has been reached"), "{err:?}");
    assert_eq!(methods(&server.requests()), ["WEBSOCKET"]);
    let sent: &Value = &server.requests()[0].body;
    // Without a session: a fresh request id each call.
    assert!(server.requests()[0].header("session-id").is_some_and(|id| id.len() == 36), "{sent}");
}

/// A `provider_stream_event` observer that never finishes (a slow
/// extension handler) does not hold a cancelled call over the socket: the
/// wait ends with the cancellation and the call is aborted, as the HTTP
/// transports' observed phase ends it.
#[tokio::test]
async fn cancelling_ends_the_wait_for_a_stream_event_observer() {
    struct Stuck {
        seen: tokio::sync::Notify,
    }
    #[async_trait::async_trait]
    impl crate::provider::observe::RequestObserver for Stuck {
        fn wants_stream_events(&self) -> bool {
            true
        }
        async fn stream_event(&self, _data: Value) {
            self.seen.notify_one();
            std::future::pending::<()>().await;
        }
    }
    let server = FakeServer::start().await.unwrap();
    server.accept_websockets();
    server.push(Reply::text("An answer the observer never lets through."));
    let provider: Arc<dyn Provider> = Arc::new(OpenAiCodexResponses::new(HttpClient::new().unwrap()));
    let stuck = Arc::new(Stuck { seen: tokio::sync::Notify::new() });
    let cancel = CancellationToken::new();
    let canceller = {
        let (stuck, cancel) = (stuck.clone(), cancel.clone());
        tokio::spawn(async move {
            stuck.seen.notified().await;
            cancel.cancel();
        })
    };
    let observer: Arc<dyn crate::provider::observe::RequestObserver> = stuck;
    let call = collect(provider.as_ref(), request(&server, Some("session-stuck")), cancel);
    // A guard against a hang only (it fails the test instead of stalling the run).
    let (events, err) = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        crate::provider::observe::observed(Some(observer), call),
    )
    .await
    .expect("the cancelled call ended");
    canceller.await.unwrap();
    assert_eq!(err.map(|e| e.kind), Some(crate::provider::ProviderErrorKind::Aborted));
    assert!(events.is_empty(), "nothing was decoded past the observed event: {events:?}");
    assert_eq!(methods(&server.requests()), ["WEBSOCKET"]);
}

/// Over the socket as over SSE, the call hands out `Opened` (the agent's
/// `message_start`) before an extension sees the answer's first stream
/// event, as pi-ai pushes its `start` before it reads the answer.
#[tokio::test]
async fn the_answer_opens_before_its_first_stream_event_is_shown() {
    use futures::StreamExt;
    #[derive(Default)]
    struct Order(std::sync::Mutex<Vec<&'static str>>);
    #[async_trait::async_trait]
    impl crate::provider::observe::RequestObserver for Order {
        fn wants_stream_events(&self) -> bool {
            true
        }
        async fn stream_event(&self, _data: Value) {
            self.0.lock().unwrap().push("stream");
        }
    }
    let server = FakeServer::start().await.unwrap();
    server.accept_websockets();
    server.push(Reply::text("Opened first."));
    let provider = OpenAiCodexResponses::new(HttpClient::new().unwrap());
    let order = Arc::new(Order::default());
    let observer: Arc<dyn crate::provider::observe::RequestObserver> = order.clone();
    let read = async {
        let mut stream = provider.stream(request(&server, Some("session-open")), CancellationToken::new());
        while let Some(event) = stream.next().await {
            if matches!(event, Ok(crate::provider::ProviderEvent::Opened)) {
                order.0.lock().unwrap().push("opened");
            }
        }
    };
    crate::provider::observe::observed(Some(observer), read).await;
    let order = order.0.lock().unwrap().clone();
    assert_eq!(order.first(), Some(&"opened"), "{order:?}");
    assert!(order.len() > 2, "{order:?}");
    assert_eq!(methods(&server.requests()), ["WEBSOCKET"]);
}
