//! pi's provider events for extensions, around each HTTP request of a model
//! call: `before_provider_headers` (handlers change `headers` in place; a
//! `null` value removes a header), `before_provider_request` (each handler
//! may replace the payload, chained), `after_provider_response` (status and
//! lower-cased headers, before the body is read), and
//! `provider_stream_event` (each parsed stream event, with the model's
//! provider, API and id; the stream waits for its handlers before decoding
//! the event, as pi awaits them). Hooks are asked in extension load order;
//! one that fails leaves the value as it was.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::Extensions;
use crate::model::Model;
use crate::provider::observe::RequestObserver;

/// The events of one model call.
pub struct ProviderEvents {
    extensions: Extensions,
    provider: String,
    api: String,
    model: String,
}

impl Extensions {
    /// The watcher of `model`'s requests, when an extension listens to a provider event.
    pub fn request_observer(&self, model: &Model) -> Option<Arc<dyn RequestObserver>> {
        let listened =
            ["before_provider_headers", "before_provider_request", "after_provider_response", "provider_stream_event"]
                .iter()
                .any(|e| self.listens(e));
        listened.then(|| {
            Arc::new(ProviderEvents {
                extensions: self.clone(),
                provider: model.provider.clone(),
                api: model.api.clone(),
                model: model.id.clone(),
            }) as Arc<dyn RequestObserver>
        })
    }

    /// The watcher of a summary's requests (a compaction's, a branch
    /// summary's), when an extension listens to `before_provider_headers`:
    /// pi makes them through the session's stream function, which runs those
    /// handlers, without the agent loop's payload, response and stream hooks.
    pub fn summary_request_observer(&self) -> Option<Arc<dyn RequestObserver>> {
        self.listens("before_provider_headers")
            .then(|| Arc::new(SummaryHeaders { extensions: self.clone() }) as Arc<dyn RequestObserver>)
    }

    /// The `before_provider_headers` handlers, chained: the headers to send.
    async fn provider_headers(&self, headers: Vec<(String, String)>) -> Vec<(String, String)> {
        let mut current: Map<String, Value> = headers.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        for ext in self.subscribers("before_provider_headers") {
            let params = json!({"headers": current});
            let Some(result) = self.ask(&ext, "before_provider_headers", params, None).await else {
                continue;
            };
            if let Some(changed) = result.get("headers").and_then(Value::as_object) {
                current = changed.clone();
            }
        }
        sent_headers(current)
    }
}

/// A summary request's one event: its headers.
struct SummaryHeaders {
    extensions: Extensions,
}

#[async_trait]
impl RequestObserver for SummaryHeaders {
    async fn headers(&self, headers: Vec<(String, String)>) -> Vec<(String, String)> {
        self.extensions.provider_headers(headers).await
    }
}

/// The headers to send after the hooks: a `null` value removes every header
/// of that name in any case, and of two names differing only in case the
/// later one (the handler's, when it set `authorization` over
/// `Authorization`) wins.
fn sent_headers(headers: Map<String, Value>) -> Vec<(String, String)> {
    let removed: Vec<String> =
        headers.iter().filter(|(_, v)| !v.is_string()).map(|(k, _)| k.to_ascii_lowercase()).collect();
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        let Some(value) = value.as_str() else { continue };
        if removed.contains(&name.to_ascii_lowercase()) {
            continue;
        }
        out.retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
        out.push((name, value.to_string()));
    }
    out
}

#[async_trait]
impl RequestObserver for ProviderEvents {
    async fn headers(&self, headers: Vec<(String, String)>) -> Vec<(String, String)> {
        self.extensions.provider_headers(headers).await
    }

    async fn payload(&self, payload: Value) -> Value {
        let mut current = payload;
        for ext in self.extensions.subscribers("before_provider_request") {
            let params = json!({"payload": current});
            let Some(result) = self.extensions.ask(&ext, "before_provider_request", params, None).await else {
                continue;
            };
            if let Some(replaced) = result.get("payload") {
                current = replaced.clone();
            }
        }
        current
    }

    async fn response(&self, status: u16, headers: Vec<(String, String)>) {
        let headers: Map<String, Value> = headers.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        for ext in self.extensions.subscribers("after_provider_response") {
            let params = json!({"status": status, "headers": headers});
            self.extensions.ask(&ext, "after_provider_response", params, None).await;
        }
    }

    fn wants_stream_events(&self) -> bool {
        self.extensions.listens("provider_stream_event")
    }

    async fn stream_event(&self, data: Value) {
        let params = json!({"data": data, "provider": self.provider, "api": self.api, "model": self.model});
        for ext in self.extensions.subscribers("provider_stream_event") {
            self.extensions.ask(&ext, "provider_stream_event", params.clone(), None).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_header_removes_it_in_any_case_and_a_later_spelling_wins() {
        let headers = json!({"Authorization": "Bearer a", "X-Title": "pi", "authorization": "Bearer b", "x-title": null, "x-new": "1"});
        let Value::Object(map) = headers else { unreachable!() };
        let mut sent = sent_headers(map);
        sent.sort();
        assert_eq!(
            sent,
            [("authorization".to_string(), "Bearer b".to_string()), ("x-new".to_string(), "1".to_string())]
        );
    }
}
