//! Model calls to a provider an extension streams itself (pi's
//! `registerProvider` with `streamSimple`): the request goes to the extension
//! as `provider_stream` (`{stream, api, model, context, options}`, the
//! context as pi-ai's: system prompt, tools, and the messages after pi's
//! `convertToLlm`); the extension streams pi-ai's events back as `streamData`
//! under that stream name and answers once its stream ended. The events are
//! mapped onto the core's by [`crate::provider::runtime`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{CallError, Extension};
use crate::message::AgentMessage;
use crate::model::ThinkingLevel;
use crate::provider::convert::{LlmMessage, to_llm};
use crate::provider::observe::RequestObserver;
use crate::provider::runtime::{PiEventSource, PiEventStream};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest};

/// Stream names of this process's provider calls.
static NEXT_STREAM: AtomicU64 = AtomicU64::new(0);

/// The provider streams of one extension.
pub struct ExtensionStreams {
    ext: Arc<Extension>,
}

impl ExtensionStreams {
    pub fn new(ext: Arc<Extension>) -> ExtensionStreams {
        ExtensionStreams { ext }
    }
}

impl PiEventSource for ExtensionStreams {
    fn open(&self, api: &str, request: ProviderRequest, cancel: CancellationToken) -> PiEventStream {
        let ext = self.ext.clone();
        let stream = format!("provider-{}", NEXT_STREAM.fetch_add(1, Ordering::Relaxed) + 1);
        let events = ext.open_stream(&stream);
        let mut params = request_params(&stream, api, &request);
        // Extensions listening to pi's provider events watch the call: the
        // stream options' hooks reach them (`providerHook`), and the
        // headers go through `before_provider_headers` first, as pi-ai's
        // `transformHeaders` runs before any provider's stream.
        let observer = crate::provider::observe::current();
        if let Some(observer) = &observer {
            ext.observe_stream(&stream, observer.clone());
            params["observed"] = json!(true);
        }
        let (answered, answer) = tokio::sync::oneshot::channel();
        let name = stream.clone();
        tokio::spawn(async move {
            if let Some(observer) = observer {
                let headers: Vec<(String, String)> = request.headers.into_iter().collect();
                let sent = observer.headers(headers).await;
                if !sent.is_empty() {
                    let sent: serde_json::Map<String, Value> = sent.into_iter().map(|(k, v)| (k, json!(v))).collect();
                    params["options"]["headers"] = Value::Object(sent);
                } else if let Some(options) = params["options"].as_object_mut() {
                    options.remove("headers");
                }
            }
            let outcome = ext.call_streaming("provider_stream", params, Some(&cancel)).await;
            // Everything it streamed was read before its answer: the stream can end.
            ext.close_stream(&name);
            let _ = answered.send(outcome);
        });
        let data = tokio_stream_of(events).map(Ok);
        let end = futures::stream::once(async move {
            match answer.await {
                Ok(Ok(_)) => None,
                Ok(Err(CallError::Cancelled)) => Some(Err(ProviderError::aborted())),
                Ok(Err(CallError::Failed(error) | CallError::Dead(error))) => {
                    Some(Err(ProviderError::new(ProviderErrorKind::InvalidRequest, error)))
                }
                Err(_) => Some(Err(ProviderError::new(ProviderErrorKind::Transient, "the extension host went away"))),
            }
        })
        .filter_map(futures::future::ready);
        data.chain(end).boxed()
    }
}

/// The `providerHook` request of a provider stream: `onPayload`
/// (`{hook: "payload", payload}`, answered `{payload}`, the payload the
/// `before_provider_request` handlers made of it), `onResponse`
/// (`{hook: "response", status, headers}`: `after_provider_response`) or
/// `onProviderStreamEvent` (`{hook: "streamEvent", data}`: answered once the
/// `provider_stream_event` handlers ran, as pi-ai's providers await it).
pub(super) async fn serve_hook(observer: Option<Arc<dyn RequestObserver>>, params: Value) -> Result<Value, String> {
    match params.get("hook").and_then(Value::as_str) {
        Some("payload") => {
            let payload = params.get("payload").cloned().unwrap_or(Value::Null);
            let payload = match observer {
                Some(observer) => observer.payload(payload).await,
                None => payload,
            };
            Ok(json!({ "payload": payload }))
        }
        Some("response") => {
            if let Some(observer) = observer {
                let status = params.get("status").and_then(Value::as_u64).and_then(|s| u16::try_from(s).ok());
                let headers = params.get("headers").and_then(Value::as_object).map(|h| {
                    h.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect::<Vec<_>>()
                });
                observer.response(status.unwrap_or(0), headers.unwrap_or_default()).await;
            }
            Ok(Value::Null)
        }
        Some("streamEvent") => {
            if let Some(observer) = observer.filter(|o| o.wants_stream_events()) {
                observer.stream_event(params.get("data").cloned().unwrap_or(Value::Null)).await;
            }
            Ok(Value::Null)
        }
        other => Err(format!("unknown provider hook: {other:?}")),
    }
}

fn tokio_stream_of(mut rx: tokio::sync::mpsc::UnboundedReceiver<Value>) -> futures::stream::BoxStream<'static, Value> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// The `provider_stream` request: pi-ai's model, context and simple-stream options.
fn request_params(stream: &str, api: &str, request: &ProviderRequest) -> Value {
    let messages: Vec<Value> = to_llm(&request.messages)
        .into_iter()
        .map(|message| match message {
            LlmMessage::User { content, timestamp } => {
                json!({"role": "user", "content": content, "timestamp": timestamp})
            }
            LlmMessage::Assistant(m) => serde_json::to_value(AgentMessage::Assistant(m)).unwrap_or(Value::Null),
            LlmMessage::ToolResult(m) => serde_json::to_value(AgentMessage::ToolResult(m)).unwrap_or(Value::Null),
        })
        .collect();
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let mut options = serde_json::Map::new();
    if let Some(key) = &request.api_key {
        options.insert("apiKey".into(), json!(key));
    }
    if !request.headers.is_empty() {
        options.insert("headers".into(), json!(request.headers));
    }
    if let Some(max) = request.max_tokens {
        options.insert("maxTokens".into(), json!(max));
    }
    if request.thinking_level != ThinkingLevel::Off {
        options.insert("reasoning".into(), json!(request.thinking_level.as_str()));
    }
    if let Some(id) = &request.session_id {
        options.insert("sessionId".into(), json!(id));
    }
    json!({
        "stream": stream,
        "api": api,
        "model": request.model,
        "context": {"systemPrompt": request.system_prompt, "tools": tools, "messages": messages},
        "options": options,
    })
}
