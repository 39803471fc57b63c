//! Model calls an extension makes through pi-rpc's providers (`modelStream`:
//! pi-ai's `stream`/`complete`, and the `…Api()` stream functions a provider
//! extension delegates to, as pi's GitLab Duo example does). The call runs
//! aside from the actor: its `message_start`/`message_update` events go to
//! the extension as `streamData` (`{kind: "start", message}`, then
//! `{event}`, pi-ai's event without `partial`), and the answer is the final
//! message.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::event::{AgentEvent, EventSink};
use crate::extensions::Extension;
use crate::extensions::protocol::stream_event;
use crate::message::AgentMessage;
use crate::model::{Model, ThinkingLevel};
use crate::provider::{ApiOptions, ProviderRequest, ToolSpec};
use crate::stream::stream_assistant;

impl Agent {
    /// Extension `id`, while it is loaded: a call it started is answered
    /// with this error once it is gone.
    pub(super) fn live_extension(&self, id: usize) -> Result<Arc<Extension>, String> {
        self.ext.handle().get(id).ok_or_else(|| "the extension is gone".to_string())
    }

    /// Start extension `id`'s model call; `reply` gets `{message}` at its end.
    pub(super) fn start_model_stream(
        &self,
        id: usize,
        params: &Value,
        cancel: CancellationToken,
        reply: oneshot::Sender<Result<Value, String>>,
    ) {
        if params.get("registry").and_then(Value::as_bool) == Some(true)
            && let Ok(model) = serde_json::from_value::<Model>(params.get("model").cloned().unwrap_or(Value::Null))
            && crate::config::models::is_virtual(&model)
        {
            if params.get("simple").and_then(Value::as_bool) == Some(true) {
                self.start_routed_stream(id, model, params, cancel, reply);
            } else {
                // pi's `stream()` / `complete()` do not route (its `unroutedStream`).
                let _ = reply.send(Err(format!("Virtual model {} must be routed before streaming", model.full_id())));
            }
            return;
        }
        let (ext, (provider, request, model)) =
            match self.live_extension(id).and_then(|ext| Ok((ext, self.model_call(params)?))) {
                Ok(found) => found,
                Err(error) => {
                    let _ = reply.send(Err(error));
                    return;
                }
            };
        let stream = params.get("stream").and_then(Value::as_str).unwrap_or_default().to_string();
        let observer = HostRequestHooks::of(&ext, &stream, params);
        tokio::spawn(async move {
            let sink = StreamBack { ext, stream };
            let key = request.api_key.clone();
            let call = stream_assistant(Some(&sink), provider, request, cancel, &model, key.as_deref());
            let outcome = crate::provider::observe::observed(observer, call).await;
            let message = serde_json::to_value(AgentMessage::Assistant(outcome.message)).unwrap_or(Value::Null);
            let _ = reply.send(Ok(json!({ "message": message })));
        });
    }

    /// `modelRegistry.streamSimple()` with a virtual model (pi's model
    /// runtime): the extension that registered it routes the request first
    /// (reason `direct`, at the options' `reasoning`, else `off`; no router
    /// state), and it goes to the physical model at the routed level, its
    /// `maxTokens` capped to that model's. The caller's key and headers go
    /// along only when the physical model has the virtual model's provider.
    /// A routing that fails ends the call with its error.
    fn start_routed_stream(
        &self,
        id: usize,
        model: Model,
        params: &Value,
        cancel: CancellationToken,
        reply: oneshot::Sender<Result<Value, String>>,
    ) {
        use crate::agent::virtual_route::VirtualRouter;
        let ext = match self.live_extension(id) {
            Ok(ext) => ext,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        let options = params.get("options").cloned().unwrap_or(Value::Null);
        let option = |key: &str| options.get(key).and_then(Value::as_str).map(str::to_string);
        let (caller_key, session_id) = (option("apiKey"), option("sessionId"));
        let wanted_tokens = options.get("maxTokens").and_then(Value::as_u64);
        let caller_headers: Vec<(String, String)> = match options.get("headers") {
            Some(Value::Object(extra)) => {
                extra.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
            }
            _ => Vec::new(),
        };
        let thinking = option("reasoning").and_then(|l| l.parse::<ThinkingLevel>().ok()).unwrap_or(ThinkingLevel::Off);
        let mut router = match self.ext.virtual_model_owner(&model.provider, &model.id) {
            Some(owner) => {
                let (registry, providers) = (self.models.registry().clone(), self.models.providers().clone());
                VirtualRouter::new(owner, model.clone(), thinking, registry, providers)
            }
            None => VirtualRouter::unregistered(model.clone(), self.models.registry().clone()),
        };
        let (messages, tools) = (call_messages(params), call_tools(params));
        let system_prompt = params.get("systemPrompt").and_then(Value::as_str).unwrap_or_default().to_string();
        let stream = params.get("stream").and_then(Value::as_str).unwrap_or_default().to_string();
        let api_options = ApiOptions::from_call(&options);
        tokio::spawn(async move {
            let routed = match router.route_direct(&messages, &cancel).await {
                Ok(routed) => routed,
                Err(error) => {
                    let _ = reply.send(Err(error));
                    return;
                }
            };
            let mut headers = routed.headers;
            let mut api_key = routed.api_key;
            if routed.model.provider == model.provider {
                for (name, value) in caller_headers {
                    headers.retain(|k, _| !k.eq_ignore_ascii_case(&name));
                    headers.insert(name, value);
                }
                api_key = caller_key.or(api_key);
            }
            let limit = routed.model.max_tokens;
            let max_tokens = wanted_tokens.map(|m| if limit > 0 { m.min(limit) } else { m });
            let request = ProviderRequest {
                model: routed.model.clone(),
                system_prompt,
                messages,
                tools,
                thinking_level: routed.thinking,
                api_key,
                headers,
                max_tokens,
                session_id,
                credential: None,
                env: Default::default(),
                api_options,
            };
            let sink = StreamBack { ext, stream };
            let key = request.api_key.clone();
            let outcome =
                stream_assistant(Some(&sink), routed.provider, request, cancel, &routed.model, key.as_deref()).await;
            let message = serde_json::to_value(AgentMessage::Assistant(outcome.message)).unwrap_or(Value::Null);
            let _ = reply.send(Ok(json!({ "message": message })));
        });
    }

    /// pi's `modelRegistry.getProvider(id)` and `getProviderAuth(id)`
    /// (`{op, args}` of a `models` request): the answer, `{value}` or `{}`
    /// (undefined); `None` for the other ops.
    pub(super) fn registry_call(&self, op: &str, args: &[Value]) -> Option<Value> {
        let value = match op {
            "getRegisteredProviderIds" => Some(json!(self.ext.registered_provider_ids())),
            _ => crate::agent::extension_model_store::registry_answer(self.models.registry(), op, args)?,
        };
        Some(value.map_or_else(|| json!({}), |value| json!({ "value": value })))
    }
    /// The provider and request of a `modelStream`: the model as the
    /// extension gives it (its own baseUrl, compat, API), the credentials and
    /// headers of its provider unless the options name them.
    #[allow(clippy::type_complexity)]
    fn model_call(
        &self,
        params: &Value,
    ) -> Result<(Arc<dyn crate::provider::Provider>, ProviderRequest, Model), String> {
        let model: Model = serde_json::from_value(params.get("model").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("modelStream: the model is not one pi-rpc can call: {e}"))?;
        let registry = self.models.registry();
        // `modelRegistry.stream/streamSimple/complete`: pi's request-time auth
        // of the model's provider (its own stream when an extension
        // registered one); pi-ai's calls go by the model's API.
        let through_registry = params.get("registry").and_then(Value::as_bool) == Some(true);
        if through_registry {
            if !crate::config::models::is_virtual(&model)
                && model.provider != crate::provider::faux::FAUX_PROVIDER
                && registry.clone().provider_info(&model.provider).is_none()
            {
                return Err(format!("Unknown provider: {}", model.provider));
            }
            if !registry.has_credentials(&model) {
                return Err(format!("Provider is not configured: {}", model.provider));
            }
        }
        let unsupported =
            || format!("The API \"{}\" of model {} is not supported by pi-rpc", model.api, model.full_id());
        let provider = if through_registry {
            let api = registry.chat_api(&model);
            let provider = self.models.providers().for_model(&model.provider, &api).ok_or_else(unsupported)?;
            self.models.authorized(provider, &model)
        } else {
            self.models.providers().get(&model.api).ok_or_else(unsupported)?
        };
        let options = params.get("options").cloned().unwrap_or(Value::Null);
        let mut headers = registry.headers(&model);
        if let Some(Value::Object(extra)) = options.get("headers") {
            for (name, value) in extra {
                if let Some(value) = value.as_str() {
                    headers.retain(|k, _| !k.eq_ignore_ascii_case(name));
                    headers.insert(name.clone(), value.to_string());
                }
            }
        }
        let api_key = options
            .get("apiKey")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| registry.api_key(&model.provider));
        let (messages, tools) = (call_messages(params), call_tools(params));
        let thinking = options
            .get("reasoning")
            .and_then(Value::as_str)
            .and_then(|l| l.parse::<ThinkingLevel>().ok())
            .map_or(ThinkingLevel::Off, |level| model.clamp_thinking(level));
        let request = ProviderRequest {
            model: model.clone(),
            system_prompt: params.get("systemPrompt").and_then(Value::as_str).unwrap_or_default().to_string(),
            messages,
            tools,
            thinking_level: thinking,
            api_key,
            headers,
            max_tokens: options.get("maxTokens").and_then(Value::as_u64),
            session_id: options.get("sessionId").and_then(Value::as_str).map(str::to_string),
            credential: None,
            env: Default::default(),
            api_options: ApiOptions::from_call(&options),
        };
        Ok((provider, request, model))
    }
}

/// The conversation of a `modelStream` (messages pi-rpc cannot read are left out).
fn call_messages(params: &Value) -> Vec<AgentMessage> {
    params
        .get("messages")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|m| serde_json::from_value::<AgentMessage>(m.clone()).ok()).collect())
        .unwrap_or_default()
}

/// The tools of a `modelStream`.
fn call_tools(params: &Value) -> Vec<ToolSpec> {
    params
        .get("tools")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|t| ToolSpec {
                    name: t.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                    description: t.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
                    parameters: t.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The request hooks a `modelStream` caller gave (pi-ai's `onPayload`,
/// `onResponse`, `transformHeaders`, `onProviderStreamEvent`; `observe`
/// names them): each is asked
/// of the host (`model_stream_hook`) at its point of the HTTP exchange, as
/// pi's SDK session wires its extensions' provider events. A hook that
/// fails leaves the request as it was.
struct HostRequestHooks {
    ext: Arc<Extension>,
    stream: String,
    hooks: Vec<String>,
}

impl HostRequestHooks {
    fn of(
        ext: &Arc<Extension>,
        stream: &str,
        params: &Value,
    ) -> Option<Arc<dyn crate::provider::observe::RequestObserver>> {
        let hooks: Vec<String> = params
            .get("observe")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        if hooks.is_empty() {
            return None;
        }
        Some(Arc::new(HostRequestHooks { ext: ext.clone(), stream: stream.to_string(), hooks }))
    }

    fn wants(&self, hook: &str) -> bool {
        self.hooks.iter().any(|h| h == hook)
    }

    async fn ask(&self, hook: &str, fields: Value) -> Option<Value> {
        let mut params = json!({ "stream": self.stream, "hook": hook });
        if let (Some(params), Value::Object(fields)) = (params.as_object_mut(), fields) {
            params.extend(fields);
        }
        match self.ext.call("model_stream_hook", params, None).await {
            Ok(answer) => Some(answer),
            Err(error) => {
                tracing::warn!(hook, ?error, "an extension's model request hook failed");
                None
            }
        }
    }
}

#[async_trait::async_trait]
impl crate::provider::observe::RequestObserver for HostRequestHooks {
    async fn headers(&self, headers: Vec<(String, String)>) -> Vec<(String, String)> {
        if !self.wants("transformHeaders") {
            return headers;
        }
        let record: serde_json::Map<String, Value> =
            headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        match self.ask("headers", json!({ "headers": record })).await {
            Some(Value::Object(answer)) => match answer.get("headers") {
                Some(Value::Object(changed)) => {
                    changed.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
                }
                _ => headers,
            },
            _ => headers,
        }
    }

    async fn payload(&self, payload: Value) -> Value {
        if !self.wants("onPayload") {
            return payload;
        }
        match self.ask("payload", json!({ "payload": payload.clone() })).await {
            Some(Value::Object(mut answer)) => answer.remove("payload").unwrap_or(payload),
            _ => payload,
        }
    }

    async fn response(&self, status: u16, headers: Vec<(String, String)>) {
        if self.wants("onResponse") {
            let record: serde_json::Map<String, Value> =
                headers.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            self.ask("response", json!({ "status": status, "headers": record })).await;
        }
    }

    fn wants_stream_events(&self) -> bool {
        self.wants("onProviderStreamEvent")
    }

    /// pi's `onProviderStreamEvent(data, model)`: the host answers once the call's hook is done.
    async fn stream_event(&self, data: Value) {
        self.ask("stream_event", json!({ "data": data })).await;
    }
}

struct StreamBack {
    ext: Arc<Extension>,
    stream: String,
}

impl StreamBack {
    fn send(&self, data: Value) {
        let params = json!({"stream": self.stream, "data": data});
        self.ext.send(&json!({"type": "request", "method": "streamData", "params": params}));
    }

    /// What the host needs of one event (the partial message's start, a
    /// stream event); `None` for the rest (the end is the answer).
    fn update(event: AgentEvent) -> Option<Value> {
        match event {
            AgentEvent::MessageStart { message } => {
                let message = serde_json::to_value(message).unwrap_or(Value::Null);
                Some(json!({"kind": "start", "message": message}))
            }
            AgentEvent::MessageUpdate { event, .. } => Some(json!({ "event": stream_event(&event) })),
            _ => None,
        }
    }
}

#[async_trait::async_trait]
impl EventSink for StreamBack {
    async fn emit(&self, event: AgentEvent) {
        if let Some(update) = Self::update(event) {
            self.send(update);
        }
    }

    /// The updates made from one read of the provider go as one batch: the
    /// host applies them together, as pi-ai handles one chunk of the stream.
    fn try_emit_all(&self, events: Vec<AgentEvent>) -> Result<(), Vec<AgentEvent>> {
        let batch: Vec<Value> = events.into_iter().filter_map(Self::update).collect();
        if !batch.is_empty() {
            self.send(json!({ "batch": batch }));
        }
        Ok(())
    }

    /// A batch with the message's fields as they stand after it (`fields`:
    /// its response id, usage, stop reason and signatures, which pi-ai's
    /// partial message has as soon as the provider says them). A read that
    /// made no event but changed them (a finish reason, usage) is an empty
    /// batch with the fields: pi-ai's message changes without an event too.
    /// The call's end (`message_end` alone) sends nothing: its answer follows
    /// with the final message, which pi-ai completes with its `done`.
    fn try_emit_streamed(
        &self,
        events: Vec<AgentEvent>,
        message: &crate::message::AssistantMessage,
        stopped: bool,
    ) -> Result<(), Vec<AgentEvent>> {
        let only_fields = events.is_empty();
        let batch: Vec<Value> = events.into_iter().filter_map(Self::update).collect();
        if !batch.is_empty() || only_fields {
            let fields = super::streamed_message_fields::streamed_message_fields(message, stopped);
            self.send(json!({ "batch": batch, "fields": fields }));
        }
        Ok(())
    }
}
