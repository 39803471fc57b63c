//! Model providers: one trait that turns a request into a stream of
//! provider-neutral events, and the implementations per wire API.
//!
//! The agent loop owns retries and the message assembly; a provider only
//! speaks its wire format and classifies its errors.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use self::api_options::ApiOptions;
use crate::message::{AgentMessage, StopReason, Usage};
use crate::model::{Model, ThinkingLevel};

pub mod ambient;
pub mod anthropic;
pub mod anthropic_federation;
pub mod anthropic_request;
pub mod api_options;
pub mod bedrock;
pub mod cache_warming;
pub mod cancel_watch;
pub mod classify;
pub mod cloudflare;
pub mod convert;
pub mod copilot;
pub mod credential;
mod direct;
pub(crate) mod driver;
pub mod edits;
pub mod env;
pub mod faux;
pub mod google;
pub mod google_request;
pub mod google_vertex;
pub mod http;
pub mod lenient;
pub mod llama_server;
pub mod mistral;
pub mod mistral_request;
pub mod observe;
pub mod openai;
pub mod origin;
pub mod pi_messages;
pub mod proxy;
pub mod read_gate;
pub mod runtime;
pub mod shared;
pub mod sse;
pub mod strict_schema;
#[cfg(test)]
pub(crate) mod test_support;
mod tls;
pub mod typed;
pub mod wire_tool_call;
pub mod wire_usage;

/// A tool as declared to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the parameters.
    pub parameters: Value,
}

/// Everything a provider needs for one model call.
#[derive(Debug, Clone)]
pub struct ProviderRequest {
    pub model: Model,
    pub system_prompt: String,
    /// The conversation as the agent holds it. Providers prepare it with
    /// [`convert`] (pi's `convertToLlm` + `transformMessages`): aborted and
    /// errored assistant messages are dropped, bash executions, summaries and
    /// custom messages become user text, images become placeholders on
    /// text-only models, orphaned tool calls get synthetic results. Callers may
    /// pre-filter; the preparation is idempotent.
    pub messages: Vec<AgentMessage>,
    pub tools: Vec<ToolSpec>,
    pub thinking_level: ThinkingLevel,
    pub api_key: Option<String>,
    /// Extra headers (from models.json and the model).
    pub headers: HashMap<String, String>,
    /// Cap on output tokens, when the caller wants less than `model.max_tokens`.
    /// Providers further fit the cap into the context window like pi
    /// ([`convert::output_budget`]).
    pub max_tokens: Option<u64>,
    /// Stable id of the session (prompt-cache key on api.openai.com, session
    /// affinity headers where the compat flags ask for them).
    pub session_id: Option<String>,
    /// Where the key comes from when it can change during the session
    /// (OAuth): asked before the call, and once more after a 401
    /// ([`credential::Authenticated`]). `None`: `api_key` is used as it is.
    pub credential: Option<Arc<dyn credential::CredentialSource>>,
    /// Provider variables stored with the credential, over the process environment.
    pub env: env::ProviderEnv,
    /// What a caller of pi-ai's `stream()` / `streamSimple()` gives beyond the
    /// above (an extension's `modelRegistry.stream()`); the agent's own
    /// requests leave it empty.
    pub api_options: ApiOptions,
}

/// Kind of a content block being streamed.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockKind {
    Text,
    Thinking,
    ToolCall { id: String, name: String },
}

/// A provider-neutral streaming event. `index` is the provider's own block key:
/// the assembler maps it to the message's `contentIndex` in order of `BlockStart`.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// The server accepted the call and its answer began (a success status
    /// and headers): pi opens the assistant message here, before the first
    /// chunk. APIs that do not report it open the message at their first event.
    Opened,
    ResponseId(String),
    BlockStart {
        index: usize,
        kind: BlockKind,
    },
    /// Text, thinking text, or a fragment of tool-call JSON arguments.
    BlockDelta {
        index: usize,
        delta: String,
    },
    /// Signature of a thinking (or text) block, to send back on the next call.
    Signature {
        index: usize,
        signature: String,
    },
    /// The thinking block was redacted by the provider.
    Redacted {
        index: usize,
    },
    BlockEnd {
        index: usize,
    },
    /// The block's whole text as the provider gives it at its end, in place
    /// of what streamed (pi-ai replaces it without an event of its own).
    BlockText {
        index: usize,
        text: String,
    },
    /// Cumulative usage so far (tokens only; the agent computes the cost).
    /// Boxed, as the rarer big payloads below: an event is as big as its
    /// largest variant, and every delta is moved as one.
    Usage(Box<Usage>),
    /// A field of the assistant message beyond the common ones (pi's
    /// `providerThinkingLevel` of Codex messages), kept in its `extra`.
    MessageField {
        key: String,
        value: Box<Value>,
    },
    /// The model's stop reason, said as soon as it is read (pi-ai sets it
    /// then, before the stream ends) and again at the stream's end; the last
    /// one counts. `raw` is the provider's own stop reason string.
    Stop {
        reason: StopReason,
        raw: Option<String>,
    },
    /// An error stop reason (a content filter's, a refusal), said as soon
    /// as it is read, as pi-ai sets `stopReason: "error"` then, with the
    /// error message it sets with it (`None`: none until the call fails at
    /// the stream's end, which it then does).
    ErrorStop {
        raw: Option<String>,
        message: Option<String>,
    },
}

/// A stop reason as an API's table maps it: a stop reason, or an error stop
/// with the error message pi-ai sets with it, if any.
pub type MappedStop = Result<StopReason, Option<String>>;

impl ProviderEvent {
    /// The stop reason just read, as an API's table maps it.
    pub fn stop_read(mapped: MappedStop, raw: Option<String>) -> Self {
        match mapped {
            Ok(reason) => Self::Stop { reason, raw },
            Err(message) => Self::ErrorStop { raw, message },
        }
    }
}

/// Classification of a failed model call.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderErrorKind {
    /// Worth retrying: 5xx, overloaded, connection reset, stream cut, timeout.
    Transient,
    /// HTTP 429 or equivalent.
    RateLimited { retry_after: Option<Duration> },
    /// The conversation does not fit the context window.
    ContextOverflow,
    /// 401/403, missing key.
    Auth,
    /// 400 and other non-retryable request errors.
    InvalidRequest,
    /// Cancelled by the caller.
    Aborted,
}

/// An error from a provider, with a readable message (pi's texts where they exist).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    pub message: String,
    pub status: Option<u16>,
}

impl ProviderError {
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError { kind, message: message.into(), status: None }
    }

    pub fn aborted() -> Self {
        ProviderError::new(ProviderErrorKind::Aborted, "Request was aborted")
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, ProviderErrorKind::Transient | ProviderErrorKind::RateLimited { .. })
    }

    /// The server's `retry-after`, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.kind {
            ProviderErrorKind::RateLimited { retry_after } => retry_after,
            _ => None,
        }
    }

    /// The core's classification of this failure.
    pub fn error_kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self.kind {
            ProviderErrorKind::RateLimited { .. } => ErrorKind::RateLimit,
            ProviderErrorKind::ContextOverflow => ErrorKind::ContextLimit,
            ProviderErrorKind::Aborted => ErrorKind::Aborted,
            ProviderErrorKind::Transient | ProviderErrorKind::Auth | ProviderErrorKind::InvalidRequest => {
                ErrorKind::Model
            }
        }
    }

    /// This failure as a core error (the same text, classified).
    pub fn to_core(&self) -> crate::error::CoreError {
        crate::error::CoreError::new(self.error_kind(), self.message.clone()).with_retryable(self.is_retryable())
    }
}

/// The stream a provider returns. It ends after `Stop` or after one `Err`.
pub type ProviderStream = BoxStream<'static, Result<ProviderEvent, ProviderError>>;

/// A wire API implementation.
pub trait Provider: Send + Sync {
    /// The `api` name this provider implements (e.g. `openai-completions`;
    /// an extension's own name for a [`runtime::RuntimeProvider`]).
    fn api(&self) -> &str;

    /// Start one model call. Cancelling `cancel` must end the stream promptly
    /// with `ProviderErrorKind::Aborted`.
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream;
}

/// Providers by `api` name.
#[derive(Clone, Default)]
pub struct ProviderRegistry {
    providers: HashMap<String, Arc<dyn Provider>>,
    /// Streams an extension registered for one provider's models (over the
    /// wire APIs): `(api, stream)`, the stream serving the provider's models
    /// of that API, or with `None` all of them (a native provider).
    by_provider: HashMap<String, (Option<String>, Arc<dyn Provider>)>,
}

impl ProviderRegistry {
    /// The built-in wire APIs, sharing one HTTP client.
    pub fn builtin(http: http::HttpClient, faux: faux::FauxProvider) -> Self {
        let mut reg = ProviderRegistry::default();
        reg.register(Arc::new(faux));
        reg.register(Arc::new(openai::completions::OpenAiCompletions::new(http.clone())));
        reg.register(Arc::new(anthropic::AnthropicMessages::new(http.clone())));
        reg.register(Arc::new(openai::responses::OpenAiResponses::new(http.clone())));
        reg.register(Arc::new(openai::azure::AzureOpenAiResponses::new(http.clone())));
        reg.register(Arc::new(openai::codex::OpenAiCodexResponses::new(http.clone())));
        reg.register(Arc::new(google::GoogleGenerativeAi::new(http.clone())));
        reg.register(Arc::new(google_vertex::GoogleVertex::new(http.clone())));
        reg.register(Arc::new(bedrock::BedrockConverseStream::new(http.clone())));
        reg.register(Arc::new(pi_messages::PiMessages::new(http.clone())));
        reg.register(Arc::new(mistral::MistralConversations::new(http)));
        reg
    }

    /// Add a wire API (wrapped so that a request's [`credential::CredentialSource`] is honoured).
    pub fn register(&mut self, provider: Arc<dyn Provider>) {
        let wrapped: Arc<dyn Provider> = Arc::new(credential::Authenticated::new(provider));
        self.providers.insert(wrapped.api().to_string(), wrapped);
    }

    /// The wire API `api` (a built-in one).
    pub fn get(&self, api: &str) -> Option<Arc<dyn Provider>> {
        self.providers.get(api).cloned()
    }

    /// The wire API that calls a model of `provider` with API `api`: the
    /// provider's own stream when one serves it, else the API's.
    pub fn for_model(&self, provider: &str, api: &str) -> Option<Arc<dyn Provider>> {
        match self.by_provider.get(provider) {
            Some((served, stream)) if served.as_deref().is_none_or(|s| s == api) => Some(stream.clone()),
            _ => self.get(api),
        }
    }

    /// A stream known only at run time (a [`runtime::RuntimeProvider`])
    /// for `provider`'s models of API `api`, or all of them with `None`:
    /// pi's composed provider streams its models of the config's `api` with
    /// the extension's `streamSimple`, and a native `Provider` streams all
    /// its models itself. Other providers' models of that API are not its.
    pub fn register_provider_stream(&mut self, provider: &str, api: Option<&str>, stream: Arc<dyn Provider>) {
        let wrapped: Arc<dyn Provider> = Arc::new(credential::Authenticated::new(stream));
        self.by_provider.insert(provider.to_string(), (api.map(str::to_string), wrapped));
    }

    /// Remove `provider`'s own stream (its models go by their API again).
    pub fn unregister_provider_stream(&mut self, provider: &str) {
        self.by_provider.remove(provider);
    }
}
