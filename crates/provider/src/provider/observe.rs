//! Watching one model request's HTTP exchange: pi's extension events
//! `before_provider_headers` (change the headers), `before_provider_request`
//! (replace the payload), `after_provider_response` (status and headers,
//! before the body is read) and `provider_stream_event` (each parsed stream
//! event). The caller runs a model call inside [`observed`]; the HTTP driver
//! every wire API shares consults the observer at those points, so a new
//! API gets the events without doing anything.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

/// What watches a request (the extensions, for the agent's model calls).
#[async_trait]
pub trait RequestObserver: Send + Sync {
    /// The headers about to be sent, credentials left out; what it returns is sent instead
    /// (with the credentials, unless it set a header of the same name).
    async fn headers(&self, headers: Vec<(String, String)>) -> Vec<(String, String)> {
        headers
    }

    /// The JSON payload about to be sent; what it returns is sent instead.
    async fn payload(&self, payload: Value) -> Value {
        payload
    }

    /// The response arrived (`headers` with lower-case names).
    async fn response(&self, _status: u16, _headers: Vec<(String, String)>) {}

    /// Whether it wants [`RequestObserver::stream_event`] (parsing each event costs).
    fn wants_stream_events(&self) -> bool {
        false
    }

    /// One event of the response stream, parsed (a string when it is not
    /// JSON), before it is decoded: the stream waits for it (pi awaits the
    /// `provider_stream_event` handlers of each chunk before decoding it).
    async fn stream_event(&self, _data: Value) {}
}

tokio::task_local! {
    static OBSERVER: Arc<dyn RequestObserver>;
}

/// Run `call` (a model call) with `observer` watching its requests.
pub async fn observed<F: Future>(observer: Option<Arc<dyn RequestObserver>>, call: F) -> F::Output {
    match observer {
        Some(observer) => OBSERVER.scope(observer, call).await,
        None => call.await,
    }
}

/// The observer of the model call being run, if any (a provider whose
/// requests are made elsewhere, as an extension's stream, hands it on).
pub fn current() -> Option<Arc<dyn RequestObserver>> {
    OBSERVER.try_with(Arc::clone).ok()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use pi_fake_server::{FakeServer, Reply};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::model::{Model, ModelCost};
    use crate::provider::http::HttpClient;
    use crate::provider::openai::completions::OpenAiCompletions;
    use crate::provider::test_support::{collect, deltas, simple_request};

    /// Adds a header, replaces the payload's temperature, records the rest.
    #[derive(Default)]
    struct Recorder {
        seen: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl RequestObserver for Recorder {
        async fn headers(&self, mut headers: Vec<(String, String)>) -> Vec<(String, String)> {
            headers.push(("x-traced".into(), "yes".into()));
            headers
        }

        async fn payload(&self, mut payload: Value) -> Value {
            self.seen.lock().unwrap().push(format!("payload model={}", payload["model"]));
            payload["temperature"] = json!(0);
            payload
        }

        async fn response(&self, status: u16, headers: Vec<(String, String)>) {
            let typed = headers.iter().any(|(k, v)| k == "content-type" && v.contains("event-stream"));
            self.seen.lock().unwrap().push(format!("response {status} sse={typed}"));
        }

        fn wants_stream_events(&self) -> bool {
            true
        }

        async fn stream_event(&self, data: Value) {
            let kind = if data.is_object() { "object" } else { "other" };
            self.seen.lock().unwrap().push(format!("event {kind}"));
        }
    }

    fn model(base_url: &str) -> Model {
        Model {
            id: "m1".into(),
            name: "m1".into(),
            api: "openai-completions".into(),
            provider: "fake".into(),
            base_url: base_url.into(),
            reasoning: false,
            input: vec!["text".into()],
            context_window: 100_000,
            max_tokens: 1000,
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
    async fn the_observer_changes_the_request_and_sees_the_response() {
        let server = FakeServer::start().await.unwrap();
        server.push(Reply::text("hi there"));
        let provider = OpenAiCompletions::new(HttpClient::new().unwrap());
        let recorder = Arc::new(Recorder::default());
        let request = simple_request(model(&server.base_url()), "hello");
        let observer: Arc<dyn RequestObserver> = recorder.clone();
        let (events, error) = observed(Some(observer), collect(&provider, request, CancellationToken::new())).await;
        assert_eq!(error, None);
        assert_eq!(deltas(&events, 0).concat(), "hi there");
        let sent = &server.requests()[0];
        assert_eq!(sent.header("x-traced"), Some("yes"));
        assert_eq!(sent.body["temperature"], 0);
        let seen = recorder.seen.lock().unwrap().clone();
        assert_eq!(seen[..2], ["payload model=\"m1\"", "response 200 sse=true"]);
        assert!(seen.len() > 3 && seen[2..].iter().all(|s| s.starts_with("event ")), "{seen:?}");

        // Outside `observed`, nothing watches.
        server.push(Reply::text("again"));
        let request = simple_request(model(&server.base_url()), "hello");
        let (_, error) = collect(&provider, request, CancellationToken::new()).await;
        assert_eq!(error, None);
        assert_eq!(server.requests()[1].header("x-traced"), None);
    }

    /// What the observer heard of one request answered `reply` through `provider`.
    async fn heard(provider: &dyn crate::provider::Provider, model: Model, server: &FakeServer) -> Vec<String> {
        let recorder = Arc::new(Recorder::default());
        let observer: Arc<dyn RequestObserver> = recorder.clone();
        let request = simple_request(model, "hello");
        let (_, error) = observed(Some(observer), collect(provider, request, CancellationToken::new())).await;
        assert!(error.is_some(), "the 500 fails the call");
        assert_eq!(server.requests().len(), 1);
        recorder.seen.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn an_error_status_is_heard_of_as_pi_ai_tells_of_it_per_api() {
        // OpenAI's SDK throws on the status before pi-ai's `onResponse`.
        let server = FakeServer::start().await.unwrap();
        server.push(Reply::error(500, "boom"));
        let provider = OpenAiCompletions::new(HttpClient::new().unwrap());
        assert_eq!(heard(&provider, model(&server.base_url()), &server).await, ["payload model=\"m1\""]);
        // pi-messages is called with `fetch`: every response is told of.
        let server = FakeServer::start().await.unwrap();
        server.push(Reply::error(500, "boom"));
        let provider = crate::provider::pi_messages::PiMessages::new(HttpClient::new().unwrap());
        let pi_model = Model { api: "pi-messages".into(), base_url: format!("{}/v1/", server.url()), ..model("") };
        let seen = heard(&provider, pi_model, &server).await;
        assert_eq!(seen.last().map(String::as_str), Some("response 500 sse=false"), "{seen:?}");
    }
}
