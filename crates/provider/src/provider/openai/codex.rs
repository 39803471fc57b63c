//! The `openai-codex-responses` wire API: the ChatGPT (Plus/Pro) Codex
//! backend, as pi 1.6.0 calls it over its SSE transport.
//!
//! * Endpoint: `{baseUrl}/codex/responses` (default base
//!   `https://chatgpt.com/backend-api`; a base already ending in `/codex` or
//!   `/codex/responses` is completed, not repeated).
//! * Credential: the ChatGPT OAuth access token (a JWT) as a bearer token;
//!   its `https://api.openai.com/auth` claim's `chatgpt_account_id` goes in
//!   `chatgpt-account-id`. Plus `originator: pi`, `OpenAI-Beta:
//!   responses=experimental`, the session id as `session-id` and
//!   `x-client-request-id`.
//! * Body: the Responses input, `store: false`, `text.verbosity: low`,
//!   encrypted reasoning included, `tool_choice: auto`, parallel tool calls;
//!   tools are `strict: null` unless they ask for strict schemas. The JSON is
//!   sent zstd-compressed (`content-encoding: zstd`), as pi does.
//! * Stream: the Responses stream with the Codex event mapping
//!   ([`super::responses::Decoder::codex`]); errors in pi's words
//!   (`You have hit your ChatGPT usage limit (plus plan). Try again in ~N min.`).
//!
//! Transport: as pi's default (`auto`), a WebSocket to the same URL first
//! ([`super::codex_ws`]), SSE for the session once that fails.

use std::sync::Arc;

use base64::Engine;
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::codex_ws::{self, Attempt, Sessions};
use super::responses::Decoder;
use super::responses_request::{
    ResponsesCompat, convert_input, convert_tools_with, normalize_tool_call_id, requested_level,
};
use crate::message::AssistantMessage;
use crate::model::{Model, ThinkingLevel};
use crate::provider::classify::{error_from, retry_after};
use crate::provider::convert;
use crate::provider::driver::{Api, Call, Reported, drive};
use crate::provider::http::HttpClient;
use crate::provider::lenient;
use crate::provider::shared::{compat_bool, level_entry, request_headers, set_header};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream};
use futures::StreamExt;

const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api";
const MIN_OUTPUT_TOKENS: u64 = 16;
/// `reasoning.effort` of requests that carry the level in `configuration_update` items.
const CONFIGURATION_UPDATE_EFFORT: &str = "medium";

/// Codex backend provider.
pub struct OpenAiCodexResponses {
    http: HttpClient,
    /// The sessions' WebSockets and SSE fallbacks.
    sessions: Arc<Sessions>,
}

impl OpenAiCodexResponses {
    pub fn new(http: HttpClient) -> Self {
        OpenAiCodexResponses { http, sessions: Arc::default() }
    }

    /// With sessions of its own (tests: a short idle limit).
    pub fn with_sessions(http: HttpClient, sessions: Sessions) -> Self {
        OpenAiCodexResponses { http, sessions: Arc::new(sessions) }
    }
}

/// pi's `resolveCodexUrl`.
pub fn endpoint(base_url: &str) -> String {
    let raw = if base_url.trim().is_empty() { DEFAULT_BASE_URL } else { base_url };
    let normalized = raw.trim_end_matches('/');
    if normalized.ends_with("/codex/responses") {
        normalized.to_string()
    } else if normalized.ends_with("/codex") {
        format!("{normalized}/responses")
    } else {
        format!("{normalized}/codex/responses")
    }
}

/// The ChatGPT account id in an access token (pi's `extractAccountId`).
pub fn account_id(token: &str) -> Result<String, ProviderError> {
    let failed = || ProviderError::new(ProviderErrorKind::Auth, "Failed to extract accountId from token");
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(failed());
    }
    let payload = parts[1].trim_end_matches('=');
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(payload)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload))
        .map_err(|_| failed())?;
    let claims: Value = serde_json::from_slice(&bytes).map_err(|_| failed())?;
    chatgpt_account_id(claims).ok_or_else(failed)
}

/// The ChatGPT account id in a token's claims: `None` when it is absent,
/// empty or of another type (also read by the OpenAI Codex login).
pub fn chatgpt_account_id(claims: Value) -> Option<String> {
    lenient::event::<Claims>(claims).and_then(|c| c.auth.chatgpt_account_id).filter(|id| !id.is_empty())
}

/// The claims of a ChatGPT access token that pi-rpc reads.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Claims {
    #[serde(rename = "https://api.openai.com/auth", deserialize_with = "lenient::object")]
    auth: AuthClaim,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AuthClaim {
    #[serde(deserialize_with = "lenient::string")]
    chatgpt_account_id: Option<String>,
}

/// An error answer's body: `error` is read when it is truthy (pi's `parseErrorResponse`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ErrorBody {
    #[serde(deserialize_with = "lenient::any")]
    error: Option<Value>,
}

/// The fields of a truthy `error` that pi's wording uses (all absent when it is no object).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ErrorFields {
    #[serde(deserialize_with = "lenient::string")]
    code: Option<String>,
    #[serde(rename = "type", deserialize_with = "lenient::string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    plan_type: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    message: Option<String>,
    #[serde(deserialize_with = "lenient::f64")]
    resets_at: Option<f64>,
}

/// pi's `resolveReasoningEffort`: the effort for a level (`none` for off), or
/// `None` when the model maps it to null.
fn effort_for(model: &Model, level: ThinkingLevel) -> Option<Value> {
    match level {
        ThinkingLevel::Off => match level_entry(model, ThinkingLevel::Off) {
            None => Some(json!("none")),
            Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        },
        level => Some(match level_entry(model, level) {
            Some(v) if !v.is_null() => v.clone(),
            _ => json!(level.as_str()),
        }),
    }
}

/// The level the request asks for: the clamped level, or off for a
/// reasoning model (sent as effort `none`), `None` for other models.
fn effort_level(request: &ProviderRequest) -> Option<ThinkingLevel> {
    match requested_level(request) {
        Some(level) => Some(level),
        None if request.model.reasoning => Some(ThinkingLevel::Off),
        None => None,
    }
}

fn compat_of(model: &Model) -> ResponsesCompat {
    let mut compat = ResponsesCompat::resolve(model);
    compat.strict_mode = compat_bool(model, "supportsStrictMode").unwrap_or(true);
    compat
}

/// The effort carried in `configuration_update` items (models with
/// `supportsMidConvoEffort`), which pi also records on the answer as its
/// `providerThinkingLevel`.
pub fn configuration_effort(request: &ProviderRequest) -> Option<Value> {
    let compat = compat_of(&request.model);
    effort_level(request).filter(|_| compat.mid_convo_effort).and_then(|l| effort_for(&request.model, l))
}

/// The request body, keys in pi's order.
pub fn build_body(request: &ProviderRequest) -> Value {
    let model = &request.model;
    let compat = compat_of(model);
    let level = effort_level(request);
    let configuration = configuration_effort(request);
    let unprepared = convert::to_llm(&request.messages);
    let max_tokens = convert::output_budget(request, &unprepared);
    let normalize = |id: &str, source: &AssistantMessage| normalize_tool_call_id(model, id, source);
    let llm = convert::transform_with(unprepared, model, Some(&normalize));
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("store".into(), json!(false));
    body.insert("stream".into(), json!(true));
    body.insert("input".into(), Value::Array(convert_input(model, &compat, request, &llm, configuration.as_ref())));
    body.insert("text".into(), json!({"verbosity": "low"}));
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(id) = &request.session_id {
        body.insert("prompt_cache_key".into(), json!(id.chars().take(64).collect::<String>()));
    }
    body.insert("tool_choice".into(), request.api_options.tool_choice.clone().unwrap_or_else(|| json!("auto")));
    body.insert("parallel_tool_calls".into(), json!(true));
    if max_tokens > 0 && compat.max_output_tokens {
        body.insert("max_output_tokens".into(), json!(max_tokens.max(MIN_OUTPUT_TOKENS)));
    }
    if let Some(t) = &request.api_options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tier) = &request.api_options.service_tier {
        body.insert("service_tier".into(), tier.clone());
    }
    if !request.tools.is_empty() && !compat.tools_in_input {
        body.insert("tools".into(), Value::Array(convert_tools_with(&request.tools, &compat, Value::Null)));
    }
    if let Some(level) = level {
        let effort =
            if configuration.is_some() { Some(json!(CONFIGURATION_UPDATE_EFFORT)) } else { effort_for(model, level) };
        if let Some(effort) = effort {
            let summary = request.api_options.reasoning_summary.as_deref().unwrap_or("auto");
            body.insert("reasoning".into(), json!({"effort": effort, "summary": summary}));
        }
    }
    Value::Object(body)
}

/// Request headers in pi's order: `originator`, model and request headers,
/// then the bearer token, account id and the SSE transport's headers.
pub fn build_headers(request: &ProviderRequest) -> Result<Vec<(String, String)>, ProviderError> {
    let Some(token) = request.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return Err(ProviderError::new(
            ProviderErrorKind::Auth,
            format!("No API key for provider: {}", request.model.provider),
        ));
    };
    let account = account_id(token)?;
    let mut headers = vec![("originator".to_string(), "pi".to_string())];
    if let Some(h) = &request.model.headers {
        for (k, v) in h {
            if let Some(s) = v.as_str() {
                set_header(&mut headers, k, s);
            }
        }
    }
    for (k, v) in request_headers(request) {
        set_header(&mut headers, &k, v);
    }
    set_header(&mut headers, "authorization", format!("Bearer {token}"));
    set_header(&mut headers, "chatgpt-account-id", account);
    set_header(&mut headers, "OpenAI-Beta", "responses=experimental");
    set_header(&mut headers, "accept", "text/event-stream");
    set_header(&mut headers, "content-type", "application/json");
    if let Some(id) = &request.session_id {
        let id: String = id.chars().take(64).collect();
        set_header(&mut headers, "session-id", id.clone());
        set_header(&mut headers, "x-client-request-id", id);
    }
    Ok(headers)
}

fn minutes_until(resets_at: f64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0);
    ((resets_at * 1000.0 - now) / 60_000.0).round().max(0.0) as i64
}

/// pi's `parseErrorResponse`: the friendly usage-limit text, else the error's message, else the body.
pub fn http_error_message(status: u16, body: &str) -> String {
    let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let mut message = if !body.is_empty() {
        body.to_string()
    } else if !reason.is_empty() {
        reason.to_string()
    } else {
        "Request failed".to_string()
    };
    let mut friendly = None;
    if let Some(err) = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(lenient::event::<ErrorBody>)
        .and_then(|b| b.error)
        .filter(crate::provider::classify::js_truthy)
    {
        let err: ErrorFields = lenient::event(err).unwrap_or_default();
        let text = |field: &Option<String>| field.clone().filter(|s| !s.is_empty());
        let code = text(&err.code).or_else(|| text(&err.kind)).unwrap_or_default();
        let lower = code.to_ascii_lowercase();
        let limit =
            ["usage_limit_reached", "usage_not_included", "rate_limit_exceeded"].iter().any(|c| lower.contains(c));
        if limit || status == 429 {
            let plan = text(&err.plan_type).map(|p| format!(" ({} plan)", p.to_lowercase())).unwrap_or_default();
            let when = err
                .resets_at
                .filter(|r| *r != 0.0)
                .map(|r| format!(" Try again in ~{} min.", minutes_until(r)))
                .unwrap_or_default();
            friendly = Some(format!("You have hit your ChatGPT usage limit{plan}.{when}").trim().to_string());
        }
        if let Some(m) = text(&err.message) {
            message = m;
        } else if let Some(f) = &friendly {
            message = f.clone();
        }
    }
    friendly.unwrap_or(message)
}

fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    error_from(Some(status), http_error_message(status, body), retry_after(headers))
}

/// A fetch failure reads `fetch failed: <cause>` in pi's Codex errors.
fn transport_error(mut err: ProviderError) -> ProviderError {
    if let Some(cause) = err.message.strip_prefix("Connection error.: ") {
        err.message = format!("fetch failed: {cause}");
    }
    err
}

fn prepare(request: &ProviderRequest) -> Result<Call, ProviderError> {
    let headers = build_headers(request)?;
    Ok(Call::new(endpoint(&request.model.base_url), headers, build_body(request)))
}

impl Provider for OpenAiCodexResponses {
    fn api(&self) -> &'static str {
        "openai-codex-responses"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let level = configuration_effort(&request).map(|value| {
            Ok(ProviderEvent::MessageField { key: "providerThinkingLevel".into(), value: Box::new(value) })
        });
        let websocket = super::codex_transport::transport().uses_socket()
            && !self.sessions.falls_back(request.session_id.as_deref());
        let attempt = if websocket {
            websocket_attempt(&self.http, &self.sessions, request, cancel.clone())
        } else {
            Err(Box::new(request))
        };
        let stream = match attempt {
            Err(request) => over_sse(self.http.clone(), *request, cancel),
            Ok(attempt) => {
                let http = self.http.clone();
                futures::stream::once(async move {
                    match codex_ws::start(attempt).await {
                        Ok(stream) => stream,
                        Err(request) => over_sse(http, *request, cancel),
                    }
                })
                .flatten()
                .boxed()
            }
        };
        futures::stream::iter(level).chain(stream).boxed()
    }
}

fn over_sse(http: HttpClient, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
    let api = Api { http_error: Box::new(http_error), transport_error, reported: Reported::Every };
    let call = prepare(&request).map(Call::zstd);
    drive(http, cancel, call, Decoder::codex(), api)
}

/// The WebSocket call of a request, or the request back when it cannot have
/// one (no usable token: the SSE path reports that without any traffic).
fn websocket_attempt(
    http: &HttpClient,
    sessions: &Arc<Sessions>,
    request: ProviderRequest,
    cancel: CancellationToken,
) -> Result<Attempt, Box<ProviderRequest>> {
    let Ok(headers) = build_headers(&request) else { return Err(Box::new(request)) };
    let Some(account) = request.api_key.as_deref().and_then(|t| account_id(t).ok()) else {
        return Err(Box::new(request));
    };
    let request_id = match &request.session_id {
        Some(id) => id.chars().take(64).collect(),
        None => uuid::Uuid::now_v7().to_string(),
    };
    Ok(Attempt {
        http: http.clone(),
        sessions: sessions.clone(),
        url: codex_ws::websocket_url(&endpoint(&request.model.base_url)),
        headers: codex_ws::websocket_headers(&headers, &request_id),
        body: build_body(&request),
        account,
        cancel,
        request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: Value) -> String {
        let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!("{}.{}.sig", b64(b"{\"alg\":\"none\"}"), b64(claims.to_string().as_bytes()))
    }

    #[test]
    fn urls_and_account_ids() {
        assert_eq!(endpoint(""), "https://chatgpt.com/backend-api/codex/responses");
        assert_eq!(endpoint("http://h/x/"), "http://h/x/codex/responses");
        assert_eq!(endpoint("http://h/codex"), "http://h/codex/responses");
        assert_eq!(endpoint("http://h/codex/responses/"), "http://h/codex/responses");
        let t = token(json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acc-1"}}));
        assert_eq!(account_id(&t).unwrap(), "acc-1");
        assert!(account_id(&token(json!({}))).is_err());
        assert_eq!(account_id("sk-plain").unwrap_err().message, "Failed to extract accountId from token");
        // A claim of another JSON type, or an empty id, is no account id.
        for claims in [
            json!({"https://api.openai.com/auth": "acc-1"}),
            json!({"https://api.openai.com/auth": {"chatgpt_account_id": 7}}),
            json!({"https://api.openai.com/auth": {"chatgpt_account_id": ""}}),
            json!([{"https://api.openai.com/auth": {"chatgpt_account_id": "acc-1"}}]),
        ] {
            assert!(account_id(&token(claims.clone())).is_err(), "{claims}");
        }
    }

    #[test]
    fn usage_limits_are_worded_like_pi() {
        let body = r#"{"error":{"code":"usage_limit_reached","plan_type":"PLUS","message":"limit"}}"#;
        assert_eq!(http_error_message(429, body), "You have hit your ChatGPT usage limit (plus plan).");
        assert_eq!(http_error_message(400, r#"{"error":{"message":"bad input"}}"#), "bad input");
        assert_eq!(http_error_message(500, ""), "Internal Server Error");
        assert_eq!(http_error_message(502, "upstream"), "upstream");
        // Fields of another JSON type read as absent; an `error` that is no object still counts when truthy.
        let limit = "You have hit your ChatGPT usage limit.";
        assert_eq!(http_error_message(429, r#"{"error":"slow down"}"#), limit);
        assert_eq!(http_error_message(400, r#"{"error":"slow down"}"#), r#"{"error":"slow down"}"#);
        assert_eq!(http_error_message(400, r#"{"error":0}"#), r#"{"error":0}"#);
        assert_eq!(http_error_message(400, r#"[{"error":{"message":"m"}}]"#), r#"[{"error":{"message":"m"}}]"#);
        let odd = r#"{"error":{"code":5,"type":"usage_not_included","plan_type":1,"message":"","resets_at":"9"}}"#;
        assert_eq!(http_error_message(400, odd), limit);
        let empty_code = r#"{"error":{"code":"","type":"rate_limit_exceeded","message":7,"resets_at":0}}"#;
        assert_eq!(http_error_message(400, empty_code), limit);
        let later = r#"{"error":{"code":"usage_limit_reached","resets_at":1e13,"message":"m"}}"#;
        assert!(http_error_message(400, later).starts_with("You have hit your ChatGPT usage limit. Try again in ~"));
    }
}
