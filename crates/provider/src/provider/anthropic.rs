//! The `anthropic-messages` wire API (Messages API with SSE streaming): sends
//! the request built by `anthropic_request`, decodes the event stream the way
//! pi 1.6 does, and words and classifies failures like the Anthropic SDK.
//!
//! Blocks are keyed by the stream's own block index and each one ends at its
//! `content_block_stop`. Only the Messages events (`message_*`,
//! `content_block_*`) and `error` are read, by their SSE event name; `ping`
//! and unknown events are skipped.

use std::collections::HashSet;
use std::sync::Mutex;

use futures::StreamExt;
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::anthropic_federation::Federation;
use super::anthropic_request::{
    build_body, build_headers, endpoint, from_claude_code_name, has_preferred_strict_tools, prepare,
};
use super::classify::{error_from, js_truthy, retry_after};
use super::driver::{Api, Call, Flow, Out, Reported, Wire, drive, same_transport_error};
use super::http::HttpClient;
use super::lenient;
use super::shared::{js_json, parse_json_with_repair};
use super::sse::SseEvent;
use super::wire_usage::InputOutput;
use super::{BlockKind, Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream, ToolSpec};
use crate::message::{StopReason, Usage};

/// Messages API provider.
pub struct AnthropicMessages {
    http: HttpClient,
}

impl AnthropicMessages {
    pub fn new(http: HttpClient) -> Self {
        AnthropicMessages { http }
    }
}

/// pi's text when the stream ends after `message_start` without `message_stop`.
pub const NO_MESSAGE_STOP_MESSAGE: &str = "Anthropic stream ended before message_stop";
/// pi's text when the stream ends without any stop reason.
pub const NO_STOP_REASON_MESSAGE: &str = "Anthropic stream ended without a stop reason";
/// Text of the thinking block of a `redacted_thinking` block.
pub const REDACTED_THINKING_TEXT: &str = "[Reasoning redacted]";

const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

/// The Anthropic SDK's message for a non-2xx answer: `<status> <message>`,
/// where the message is the body's `message`, else the body as JSON, else
/// the raw text (`<status> status code (no body)` when empty).
pub fn http_error_message(status: u16, body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok().filter(js_truthy);
    let message = match &parsed {
        Some(v) => match v.get("message").filter(|m| js_truthy(m)) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(js_json(other)),
            None => Some(js_json(v)),
        },
        None => Some(body.to_string()).filter(|b| !b.is_empty()),
    };
    match message {
        Some(m) => format!("{status} {m}"),
        None => format!("{status} status code (no body)"),
    }
}

/// The classified error for a non-2xx Messages API answer.
pub fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    error_from(Some(status), http_error_message(status, body), retry_after(headers))
}

/// pi's `mapStopReason`: the stop reason, or the error text of an error stop
/// (`explanation`: the `stop_details.explanation` of a refusal).
pub fn map_stop_reason(reason: &str, explanation: Option<&str>) -> Result<Result<StopReason, String>, String> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        "refusal" => Err(explanation
            .filter(|s| !s.is_empty())
            .unwrap_or("The model refused to complete the request")
            .to_string()),
        "sensitive" => Err("Provider stopped with: sensitive".to_string()),
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    Text,
    Thinking,
    Tool,
}

/// One Messages API stream event, by its `type`; other types are skipped.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        #[serde(default, deserialize_with = "lenient::object")]
        message: StartedMessage,
    },
    ContentBlockStart {
        #[serde(default, deserialize_with = "lenient::u64")]
        index: Option<u64>,
        #[serde(default, deserialize_with = "lenient::object")]
        content_block: Block,
    },
    ContentBlockDelta {
        #[serde(default, deserialize_with = "lenient::u64")]
        index: Option<u64>,
        #[serde(default, deserialize_with = "lenient::object")]
        delta: BlockChange,
    },
    ContentBlockStop {
        #[serde(default, deserialize_with = "lenient::u64")]
        index: Option<u64>,
    },
    MessageDelta {
        #[serde(default, deserialize_with = "lenient::object")]
        delta: MessageChange,
        #[serde(default, deserialize_with = "lenient::object")]
        usage: WireUsage,
    },
    MessageStop {},
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StartedMessage {
    #[serde(deserialize_with = "lenient::string")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient::object")]
    usage: WireUsage,
}

/// The usage counts of `message_start` and `message_delta`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct WireUsage {
    #[serde(flatten)]
    counts: InputOutput,
    #[serde(deserialize_with = "lenient::u64")]
    cache_read_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::object")]
    cache_creation: CacheCreation,
    #[serde(deserialize_with = "lenient::object")]
    output_tokens_details: OutputDetails,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CacheCreation {
    #[serde(deserialize_with = "lenient::u64")]
    ephemeral_1h_input_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct OutputDetails {
    #[serde(deserialize_with = "lenient::u64")]
    thinking_tokens: Option<u64>,
}

/// The block a `content_block_start` opens.
#[derive(Deserialize, Default)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default, deserialize_with = "lenient::text")]
        text: String,
    },
    Thinking {
        #[serde(default, deserialize_with = "lenient::text")]
        thinking: String,
        #[serde(default, deserialize_with = "lenient::text")]
        signature: String,
    },
    RedactedThinking {
        #[serde(default, deserialize_with = "lenient::text")]
        data: String,
    },
    ToolUse {
        #[serde(default, deserialize_with = "lenient::text")]
        id: String,
        #[serde(default, deserialize_with = "lenient::text")]
        name: String,
    },
    Fallback {},
    #[default]
    #[serde(other)]
    Other,
}

/// The change a `content_block_delta` brings to its block.
#[derive(Deserialize, Default)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockChange {
    TextDelta {
        #[serde(default, deserialize_with = "lenient::text")]
        text: String,
    },
    ThinkingDelta {
        #[serde(default, deserialize_with = "lenient::text")]
        thinking: String,
    },
    InputJsonDelta {
        #[serde(default, deserialize_with = "lenient::text")]
        partial_json: String,
    },
    SignatureDelta {
        #[serde(default, deserialize_with = "lenient::text")]
        signature: String,
    },
    #[default]
    #[serde(other)]
    Other,
}

/// The `delta` of `message_delta`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageChange {
    #[serde(deserialize_with = "lenient::string")]
    stop_reason: Option<String>,
    #[serde(deserialize_with = "lenient::object")]
    stop_details: StopDetails,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StopDetails {
    #[serde(deserialize_with = "lenient::string")]
    explanation: Option<String>,
}

/// Event-by-event state of one response.
struct Decoder {
    /// OAuth-token requests use Claude Code's tool names; map them back.
    oauth_tools: Option<Vec<ToolSpec>>,
    open: std::collections::HashMap<usize, Open>,
    signatures: std::collections::HashMap<usize, String>,
    has_content: bool,
    usage: Usage,
    cache_write_1h: u64,
    reasoning: Option<u64>,
    saw_start: bool,
    saw_stop: bool,
    stop: Option<(Result<StopReason, String>, String)>,
}

impl Decoder {
    fn usage_event(&self) -> ProviderEvent {
        let mut usage = self.usage.clone();
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
        usage.extra.insert("cacheWrite1h".into(), self.cache_write_1h.into());
        usage.reasoning = self.reasoning;
        ProviderEvent::Usage(Box::new(usage))
    }

    fn on_message_start(&mut self, message: StartedMessage, out: &mut Out) {
        self.saw_start = true;
        if let Some(id) = message.id {
            out.emit(ProviderEvent::ResponseId(id));
        }
        let u = message.usage;
        self.usage.input = u.counts.input_tokens.unwrap_or(0);
        self.usage.output = u.counts.output_tokens.unwrap_or(0);
        self.usage.cache_read = u.cache_read_input_tokens.unwrap_or(0);
        self.usage.cache_write = u.cache_creation_input_tokens.unwrap_or(0);
        self.cache_write_1h = u.cache_creation.ephemeral_1h_input_tokens.unwrap_or(0);
        out.emit(self.usage_event());
    }

    fn on_block_start(&mut self, index: Option<u64>, block: Block, out: &mut Out) -> Result<(), ProviderError> {
        let Some(index) = index.map(|i| i as usize) else { return Ok(()) };
        match block {
            Block::Fallback {} if self.has_content => {
                return Err(error_from(
                    None,
                    "Anthropic performed an unsupported mid-output model fallback".into(),
                    None,
                ));
            }
            Block::Text { text } => {
                self.start(index, Open::Text, BlockKind::Text, out);
                if !text.is_empty() {
                    out.emit(ProviderEvent::BlockDelta { index, delta: text });
                }
            }
            Block::Thinking { thinking, signature } => {
                self.start(index, Open::Thinking, BlockKind::Thinking, out);
                if !thinking.is_empty() {
                    out.emit(ProviderEvent::BlockDelta { index, delta: thinking });
                }
                // pi keeps the start's signature, `""` when there is none yet.
                self.signatures.insert(index, signature.clone());
                out.emit(ProviderEvent::Signature { index, signature });
            }
            Block::RedactedThinking { data } => {
                self.start(index, Open::Thinking, BlockKind::Thinking, out);
                out.emit(ProviderEvent::BlockDelta { index, delta: REDACTED_THINKING_TEXT.into() });
                out.emit(ProviderEvent::Signature { index, signature: data });
                out.emit(ProviderEvent::Redacted { index });
            }
            Block::ToolUse { id, mut name } => {
                if let Some(tools) = &self.oauth_tools {
                    name = from_claude_code_name(&name, tools);
                }
                self.start(index, Open::Tool, BlockKind::ToolCall { id, name }, out);
            }
            Block::Fallback {} | Block::Other => {}
        }
        Ok(())
    }

    fn start(&mut self, index: usize, open: Open, kind: BlockKind, out: &mut Out) {
        self.has_content = true;
        self.open.insert(index, open);
        out.emit(ProviderEvent::BlockStart { index, kind });
    }

    fn on_block_delta(&mut self, index: Option<u64>, delta: BlockChange, out: &mut Out) {
        let Some(index) = index.map(|i| i as usize) else { return };
        let Some(open) = self.open.get(&index).copied() else { return };
        match (delta, open) {
            (BlockChange::TextDelta { text }, Open::Text) => out.emit(ProviderEvent::BlockDelta { index, delta: text }),
            (BlockChange::ThinkingDelta { thinking }, Open::Thinking) => {
                out.emit(ProviderEvent::BlockDelta { index, delta: thinking });
            }
            (BlockChange::InputJsonDelta { partial_json }, Open::Tool) => {
                out.emit(ProviderEvent::BlockDelta { index, delta: partial_json });
            }
            (BlockChange::SignatureDelta { signature: part }, Open::Thinking) => {
                let signature = self.signatures.entry(index).or_default();
                signature.push_str(&part);
                out.emit(ProviderEvent::Signature { index, signature: signature.clone() });
            }
            _ => {}
        }
    }

    fn on_message_delta(&mut self, delta: MessageChange, u: WireUsage, out: &mut Out) -> Result<(), ProviderError> {
        if let Some(reason) = delta.stop_reason.filter(|r| !r.is_empty()) {
            let mapped = map_stop_reason(&reason, delta.stop_details.explanation.as_deref())
                .map_err(|e| error_from(None, e, None))?;
            // Said at once, as pi-ai sets it when it reads it, an error one
            // with its message (the stream's end says it again, or fails the call).
            out.emit(ProviderEvent::stop_read(mapped.clone().map_err(Some), Some(reason.clone())));
            self.stop = Some((mapped, reason));
        }
        // Counts that are absent (or a `usage` that is no object) keep the earlier ones.
        if let Some(n) = u.counts.input_tokens {
            self.usage.input = n;
        }
        if let Some(n) = u.counts.output_tokens {
            self.usage.output = n;
        }
        if let Some(n) = u.cache_read_input_tokens {
            self.usage.cache_read = n;
        }
        if let Some(n) = u.cache_creation_input_tokens {
            self.usage.cache_write = n;
        }
        if let Some(n) = u.cache_creation.ephemeral_1h_input_tokens {
            self.cache_write_1h = n;
        }
        if let Some(n) = u.output_tokens_details.thinking_tokens {
            self.reasoning = Some(n);
        }
        out.emit(self.usage_event());
        Ok(())
    }
}

impl Wire for Decoder {
    fn on_event(&mut self, ev: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError> {
        if ev.event == "error" {
            return Err(error_from(None, ev.data.clone(), None));
        }
        if !MESSAGE_EVENTS.contains(&ev.event.as_str()) {
            return Ok(Flow::Continue);
        }
        let event = parse_json_with_repair(&ev.data).map_err(|e| {
            let raw: Vec<String> = std::iter::once(format!("event: {}", ev.event))
                .chain(ev.data.split('\n').map(|l| format!("data: {l}")))
                .collect();
            let text = format!(
                "Could not parse Anthropic SSE event {}: {e}; data={}; raw={}",
                ev.event,
                ev.data,
                raw.join("\\n")
            );
            error_from(None, text, None)
        })?;
        match lenient::event(event).unwrap_or(Event::Other) {
            Event::MessageStart { message } => self.on_message_start(message, out),
            Event::ContentBlockStart { index, content_block } => self.on_block_start(index, content_block, out)?,
            Event::ContentBlockDelta { index, delta } => self.on_block_delta(index, delta, out),
            Event::ContentBlockStop { index } => {
                if let Some(index) = index.map(|i| i as usize)
                    && self.open.remove(&index).is_some()
                {
                    out.emit(ProviderEvent::BlockEnd { index });
                }
            }
            Event::MessageDelta { delta, usage } => self.on_message_delta(delta, usage, out)?,
            Event::MessageStop {} => self.saw_stop = true,
            Event::Other => {}
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, out: &mut Out) -> Result<(), ProviderError> {
        if self.saw_start && !self.saw_stop {
            return Err(error_from(None, NO_MESSAGE_STOP_MESSAGE.into(), None));
        }
        match self.stop.take() {
            None => Err(error_from(None, NO_STOP_REASON_MESSAGE.into(), None)),
            Some((Err(text), _)) => Err(error_from(None, text, None)),
            Some((Ok(reason), raw)) => {
                out.emit(ProviderEvent::Stop { reason, raw: Some(raw) });
                Ok(())
            }
        }
    }
}

/// Texts with which Claude rejects strict tools beyond its limits (20 strict
/// tools, 16 optional or union-typed parameters).
const STRICT_LIMIT_MESSAGES: [&str; 3] = [
    "The compiled grammar is too large",
    "Too many strict tools (",
    "Schemas contains too many parameters with union types (",
];

/// Sessions whose strict tools Claude rejected; their later requests send
/// the tools plain at once (pi keeps the same per-process memory).
static STRICT_LIMITED_SESSIONS: Mutex<Option<HashSet<String>>> = Mutex::new(None);
const MAX_STRICT_LIMITED_SESSIONS: usize = 10_000;

fn strict_limited(session: Option<&str>) -> bool {
    let Some(id) = session else { return false };
    STRICT_LIMITED_SESSIONS.lock().map(|g| g.as_ref().is_some_and(|s| s.contains(id))).unwrap_or(false)
}

fn mark_strict_limited(session: Option<&str>) {
    let Some(id) = session else { return };
    if let Ok(mut guard) = STRICT_LIMITED_SESSIONS.lock() {
        let set = guard.get_or_insert_with(HashSet::new);
        if set.len() >= MAX_STRICT_LIMITED_SESSIONS {
            set.clear();
        }
        set.insert(id.to_string());
    }
}

/// A 400 `invalid_request_error` about strict tool limits.
fn is_strict_limit_error(err: &ProviderError) -> bool {
    err.status == Some(400)
        && err.message.contains("invalid_request_error")
        && STRICT_LIMIT_MESSAGES.iter().any(|m| err.message.contains(m))
}

fn decoder(oauth_tools: Option<Vec<ToolSpec>>) -> Decoder {
    Decoder {
        oauth_tools,
        open: Default::default(),
        signatures: Default::default(),
        has_content: false,
        usage: Usage::default(),
        cache_write_1h: 0,
        reasoning: None,
        saw_start: false,
        saw_stop: false,
        stop: None,
    }
}

fn api() -> Api {
    Api { http_error: Box::new(http_error), transport_error: same_transport_error, reported: Reported::Successes }
}

/// One call of the request; `plain` sends preferred-strict tools without strict schemas.
fn call_stream(
    http: &HttpClient,
    request: &ProviderRequest,
    cancel: &CancellationToken,
    plain: bool,
    federated: bool,
) -> (ProviderStream, bool) {
    let (llm, mut plan) = prepare(request, plain);
    plan.federated = federated;
    let retry_plain = !plain && has_preferred_strict_tools(request, &plan);
    let oauth_tools = plan.oauth.then(|| request.tools.clone());
    let call = build_headers(request, &plan)
        .map(|headers| Call::new(endpoint(&request.model), headers, build_body(request, &plan, &llm)));
    (drive(http.clone(), cancel.clone(), call, decoder(oauth_tools), api()), retry_plain)
}

impl Provider for AnthropicMessages {
    fn api(&self) -> &'static str {
        "anthropic-messages"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        match Federation::for_request(&request) {
            Some(federation) => federated(self.http.clone(), federation, request, cancel),
            None => stream_with(self.http.clone(), request, cancel, false),
        }
    }
}

/// A call authenticated by workload identity federation: the access token
/// first (cached, or exchanged), then the call with it; a 401 drops it.
fn federated(
    http: HttpClient,
    federation: Federation,
    mut request: ProviderRequest,
    cancel: CancellationToken,
) -> ProviderStream {
    let opened = async move {
        let base = request.model.base_url.clone();
        let token = tokio::select! {
            biased;
            _ = cancel.cancelled() => return futures::stream::iter([Err(ProviderError::aborted())]).boxed(),
            token = federation.token(&base, &http) => token,
        };
        match token {
            Err(e) => futures::stream::iter([Err(e)]).boxed(),
            Ok(token) => {
                request.api_key = Some(token);
                stream_with(http, request, cancel, true)
                    .inspect(move |item| {
                        if matches!(item, Err(e) if e.status == Some(401)) {
                            federation.invalidate(&base);
                        }
                    })
                    .boxed()
            }
        }
    };
    futures::stream::once(opened).flatten().boxed()
}

/// Like pi, a request whose preferred-strict tools Claude rejects for its
/// limits is sent once more with those tools plain, and the session
/// remembers it.
fn stream_with(
    http: HttpClient,
    request: ProviderRequest,
    cancel: CancellationToken,
    federated: bool,
) -> ProviderStream {
    let session = request.session_id.clone();
    let plain = strict_limited(session.as_deref());
    let (mut first, retry_plain) = call_stream(&http, &request, &cancel, plain, federated);
    if !retry_plain {
        return first;
    }
    let opened = async move {
        match first.next().await {
            Some(Err(e)) if is_strict_limit_error(&e) && !cancel.is_cancelled() => {
                mark_strict_limited(session.as_deref());
                call_stream(&http, &request, &cancel, true, federated).0
            }
            Some(item) => futures::stream::once(async move { item }).chain(first).boxed(),
            None => first,
        }
    };
    futures::stream::once(opened).flatten().boxed()
}

#[cfg(test)]
mod tests;
