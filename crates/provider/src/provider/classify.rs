//! Provider error texts and their classification: pi 1.6's message formats
//! for OpenAI-style HTTP and stream errors, its context-overflow and
//! retryable-error patterns, and `Retry-After` parsing.
//!
//! pi decides retry and overflow recovery from the error *text*
//! (`isContextOverflow`, `isRetryableAssistantError`); [`classify`] applies the
//! same patterns, with the HTTP status as a first hint, so that
//! [`ProviderErrorKind`] agrees with what pi would do with the same message.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::shared::js_json;
use super::{ProviderError, ProviderErrorKind};

/// pi truncates an error body to this many characters.
pub const MAX_ERROR_BODY_CHARS: usize = 4000;

/// Longest `errorMessage` kept (in bytes, the note included): a provider's
/// 5 MB error page would otherwise be copied into every event and the
/// session file, once per attempt.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 64 * 1024;

/// Bound an error text to [`MAX_ERROR_MESSAGE_BYTES`]: the first part, cut on
/// a character boundary, and a note of how long the text was. `body_note`
/// says what the response body was when only part of it was read (then the
/// note is added even to a short text).
pub fn cap_error_message(message: String, body_note: Option<&str>) -> String {
    if message.len() <= MAX_ERROR_MESSAGE_BYTES && body_note.is_none() {
        return message;
    }
    let body = body_note.map(|b| format!("; {b}")).unwrap_or_default();
    let note = format!("… [error text of {} bytes cut to its first KEPT bytes{body}]", message.len());
    let mut keep = MAX_ERROR_MESSAGE_BYTES.saturating_sub(note.len() + 8).min(message.len());
    while !message.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{}", &message[..keep], note.replace("KEPT", &keep.to_string()))
}

fn build(patterns: &[&str]) -> Option<Regex> {
    Regex::new(&format!("(?i){}", patterns.join("|"))).ok()
}

/// pi-ai `OVERFLOW_PATTERNS` (utils/overflow.js).
static OVERFLOW: LazyLock<Option<Regex>> = LazyLock::new(|| {
    build(&[
        r"prompt (?:is )?too long",
        r"prompt exceeds max length",
        r"request_too_large",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        r"context window exceeded",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
        r"model_context_window_exceeded",
        r"prompt too long; exceeded (?:max )?context length",
        r"range of input length should be",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
    ])
});

/// pi-ai `NON_OVERFLOW_PATTERNS`: these win over an overflow match.
static NON_OVERFLOW: LazyLock<Option<Regex>> =
    LazyLock::new(|| build(&[r"^(Throttling error|Service unavailable):", r"rate limit", r"too many requests"]));

/// pi-ai `NON_RETRYABLE_PROVIDER_LIMIT_ERROR_PATTERN`: quota and billing exhaustion.
static NON_RETRYABLE_LIMIT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    build(&[
        "GoUsageLimitError",
        "FreeUsageLimitError",
        "Monthly usage limit reached",
        "available balance",
        "insufficient_quota",
        "out of budget",
        "quota exceeded",
        "billing",
        "subscription_sharing_usage_limit_exceeded",
        "subscription_sharing_workplace_individual_usage_limit_exceeded",
        r#""code"\s*:\s*"?1308(?:$|[^0-9])"#,
    ])
});

/// pi-ai `RETRYABLE_PROVIDER_ERROR_PATTERN`. JavaScript look-arounds are
/// rewritten as explicit boundaries (same matches, Rust's regex has none).
static RETRYABLE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    build(&[
        "overloaded",
        "server_busy",
        "servers are currently busy",
        "currently experiencing high demand",
        "model is at capacity",
        "rate.?limit",
        "too many requests",
        "(?:^|[^a-z0-9])(?:429|500|502|503|504|520|524)(?:$|[^a-z0-9])",
        "service.?(?:is.?)?(?:temporarily.?)?unavailable",
        "server.?error",
        "internal.?error",
        "provider.?returned.?(?:an.?)?error",
        "exceeded request buffer limit while retrying upstream",
        "unable to forward upstream",
        "upstream.?request.?failed",
        "upstream_stream_read_error",
        "stream was interrupted",
        "http/?2 stream failed",
        "network.?error",
        "connection.?error",
        "connection.?refused",
        "connection.?lost",
        "connection.?closed",
        "other side closed",
        "fetch failed",
        r"request to \S+ failed, reason:",
        "getaddrinfo",
        "(?:^|[^a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?:$|[^a-z0-9_])",
        "connection reset by peer",
        "ENOTFOUND",
        "EAI_AGAIN",
        "upstream.?connect",
        "reset before headers",
        "socket hang up",
        "socket connection was closed",
        "timed? out",
        "timeout",
        "terminated",
        "websocket.?closed",
        "websocket.?error",
        "websocket.?connection.?limit.?reached",
        "ended without",
        "stream ended before message_stop",
        "stream ended before a terminal response event",
        "http2 request did not get a response",
        "stream disconnected before completion",
        "cut short after the reply had begun",
        "pending stream has been canceled",
        "retry delay",
        "you can retry your request",
        "try your request again",
        "please retry your request",
        "ResourceExhausted",
        "subscription_sharing_usage_unavailable",
        "subscription_sharing_user_unavailable",
    ])
});

static RATE_LIMIT_TEXT: LazyLock<Option<Regex>> = LazyLock::new(|| build(&["rate.?limit", "too many requests"]));

fn matches(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(text))
}

/// pi's `isContextOverflow` on an error text.
pub fn is_context_overflow(message: &str) -> bool {
    !matches(&NON_OVERFLOW, message) && matches(&OVERFLOW, message)
}

/// pi's `isRetryableAssistantError` on an error text.
pub fn is_retryable_message(message: &str) -> bool {
    !matches(&NON_RETRYABLE_LIMIT, message) && matches(&RETRYABLE, message)
}

/// Classify a failure from its HTTP status (if any) and its final text.
pub fn classify(status: Option<u16>, message: &str, retry_after: Option<Duration>) -> ProviderErrorKind {
    if is_context_overflow(message) {
        return ProviderErrorKind::ContextOverflow;
    }
    if matches!(status, Some(401 | 403)) {
        return ProviderErrorKind::Auth;
    }
    if matches(&NON_RETRYABLE_LIMIT, message) {
        return ProviderErrorKind::InvalidRequest;
    }
    match status {
        Some(429) => return ProviderErrorKind::RateLimited { retry_after },
        Some(500 | 502 | 503 | 504 | 520 | 524 | 529) => return ProviderErrorKind::Transient,
        _ => {}
    }
    if matches(&RATE_LIMIT_TEXT, message) {
        ProviderErrorKind::RateLimited { retry_after }
    } else if matches(&RETRYABLE, message) {
        ProviderErrorKind::Transient
    } else {
        ProviderErrorKind::InvalidRequest
    }
}

/// A classified error with its text and status.
pub fn error_from(status: Option<u16>, message: String, retry_after: Option<Duration>) -> ProviderError {
    ProviderError { kind: classify(status, &message, retry_after), message, status }
}

/// JavaScript truthiness of a JSON value.
pub fn js_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The OpenAI SDK's `APIError` message text for an error object: its
/// `message`, else the object as JSON.
fn sdk_message(error: Option<&Value>) -> Option<String> {
    let error = error.filter(|e| js_truthy(e))?;
    Some(match error.get("message").filter(|m| js_truthy(m)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_json(other),
        None => js_json(error),
    })
}

/// Truncate like pi (`… [truncated N chars]`).
pub fn truncate_error_text(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let head: String = text.chars().take(max_chars).collect();
    format!("{head}... [truncated {} chars]", count - max_chars)
}

/// How the OpenAI SDK (7.x) reads a non-2xx answer, as pi then sees it:
/// the error's message (`<status> <msg>`, `<status> <raw text>`, or
/// `<status> status code (no body)`) and, when the error is a non-empty JSON
/// object, that object as JSON (truncated to 4000 chars). A JSON body
/// without an `error` field counts as the error itself.
pub fn openai_sdk_error(status: u16, body: &str) -> (String, Option<String>) {
    let parsed: Option<Value> = serde_json::from_str::<Value>(body).ok().filter(js_truthy);
    let (error, text) = match &parsed {
        Some(v @ (Value::Object(_) | Value::Array(_))) if v.get("error").is_none_or(Value::is_null) => (Some(v), None),
        Some(v) => (v.get("error"), None),
        None => (None, Some(body.to_string())),
    };
    let msg = sdk_message(error).or(text).filter(|m| !m.is_empty());
    let message = match msg {
        Some(m) => format!("{status} {m}"),
        None => format!("{status} status code (no body)"),
    };
    let body_json = error
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .map(|e| truncate_error_text(js_json(e).trim(), MAX_ERROR_BODY_CHARS));
    (message, body_json)
}

/// OpenRouter's `error.metadata.raw`, which pi appends to the message when missing from it.
fn with_raw_metadata(message: String, error: Option<&Value>) -> String {
    match error.and_then(|e| e.pointer("/metadata/raw")).filter(|r| js_truthy(r)) {
        Some(raw) => {
            let raw = match raw {
                Value::String(s) => s.clone(),
                other => js_json(other),
            };
            if message.contains(&raw) { message } else { format!("{message}\n{raw}") }
        }
        None => message,
    }
}

/// pi 1.6's text for a non-2xx response of an OpenAI-compatible API:
/// `"<status>: <JSON of the error>"` when the SDK message does not already
/// contain it, else the SDK message (see [`openai_sdk_error`]); OpenRouter's
/// raw provider metadata appended.
pub fn openai_http_error_message(status: u16, body: &str) -> String {
    let (message, body_json) = openai_sdk_error(status, body);
    let text = match body_json {
        Some(b) if !message.contains(&b) => format!("{status}: {b}"),
        _ => message,
    };
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    with_raw_metadata(text, parsed.as_ref().and_then(|v| v.get("error")))
}

/// The classified error for a non-2xx OpenAI-compatible response.
pub fn openai_http_error(status: u16, headers: &reqwest::header::HeaderMap, body: &str) -> ProviderError {
    error_from(Some(status), openai_http_error_message(status, body), retry_after(headers))
}

/// pi's text for an error object received inside an OpenAI stream
/// (`data: {"error": …}` or `event: error`): the error's message.
pub fn openai_stream_error_message(error: &Value) -> String {
    let message = sdk_message(Some(error)).unwrap_or_else(|| "(no status code or body)".to_string());
    with_raw_metadata(message, Some(error))
}

/// pi's text for an SSE `data:` payload that is not JSON (the OpenAI SDK's).
pub const MALFORMED_EVENT_MESSAGE: &str = "Error reading response: malformed server-sent event JSON.";

/// Server-requested delay: `retry-after-ms` (milliseconds), else `retry-after`
/// (seconds, or an HTTP date).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let from_ms = |ms: f64| (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0));
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return from_ms(ms);
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return from_ms(secs * 1000.0);
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let ms = (date.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds();
    Some(Duration::from_millis(ms.max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn long_error_texts_are_cut_with_a_note() {
        assert_eq!(cap_error_message("500 short".into(), None), "500 short");
        let long = format!("500 {}é", "x".repeat(200_000));
        let capped = cap_error_message(long.clone(), None);
        assert!(capped.len() <= MAX_ERROR_MESSAGE_BYTES);
        assert!(capped.starts_with("500 xxx"));
        assert!(
            capped.ends_with(&format!("… [error text of {} bytes cut to its first 65468 bytes]", long.len())),
            "{}",
            &capped[65_400..]
        );
        let noted = cap_error_message("400 abc".into(), Some("the response body had 5000000 bytes"));
        assert_eq!(
            noted,
            "400 abc… [error text of 7 bytes cut to its first 7 bytes; the response body had 5000000 bytes]"
        );
        // Multi-byte characters are never split.
        let wide = "é".repeat(40_000);
        assert!(cap_error_message(wide, None).starts_with("éé"));
    }

    #[test]
    fn openai_error_texts_match_pi() {
        let body = r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#;
        assert_eq!(
            openai_http_error_message(500, body),
            r#"500: {"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}"#
        );
        assert_eq!(openai_http_error_message(502, "Bad Gateway"), "502 Bad Gateway");
        assert_eq!(openai_http_error_message(503, ""), "503 status code (no body)");
        // A JSON body without `error` is the error itself (checked against pi 1.6.0).
        assert_eq!(openai_http_error_message(500, r#"{"detail":"x"}"#), r#"500 {"detail":"x"}"#);
        assert_eq!(openai_http_error_message(500, "null"), "500 null");
        assert_eq!(openai_http_error_message(500, r#""text""#), "500 status code (no body)");
        let routed =
            r#"{"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream said no"}}}"#;
        assert_eq!(
            openai_http_error_message(502, routed),
            "502: {\"message\":\"Provider returned error\",\"code\":502,\"metadata\":{\"raw\":\"upstream said no\"}}"
        );
        let (message, body) =
            openai_sdk_error(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert_eq!(message, "529 Overloaded");
        assert_eq!(body.as_deref(), Some(r#"{"type":"overloaded_error","message":"Overloaded"}"#));
        assert_eq!(openai_http_error_message(400, r#"{"error":"bad"}"#), r#"400 "bad""#);
        // No message: the SDK message already carries the JSON.
        assert_eq!(openai_http_error_message(418, r#"{"error":{"code":7}}"#), r#"418 {"code":7}"#);
    }

    #[test]
    fn classification_follows_status_then_text() {
        let k = |status, msg: &str| classify(status, msg, None);
        assert_eq!(k(Some(500), "500: {}"), ProviderErrorKind::Transient);
        assert_eq!(k(Some(529), "529 x"), ProviderErrorKind::Transient);
        assert_eq!(k(Some(401), "401: {\"message\":\"Incorrect API key\"}"), ProviderErrorKind::Auth);
        assert_eq!(k(Some(403), "403 status code (no body)"), ProviderErrorKind::Auth);
        assert_eq!(k(Some(400), "400: {\"message\":\"bad thing\"}"), ProviderErrorKind::InvalidRequest);
        assert_eq!(k(Some(404), "404 Not Found"), ProviderErrorKind::InvalidRequest);
        assert_eq!(
            k(Some(400), "400: {\"message\":\"This model's maximum context length is 128000 tokens.\"}"),
            ProviderErrorKind::ContextOverflow
        );
        assert_eq!(k(Some(400), "400: {\"code\":\"context_length_exceeded\"}"), ProviderErrorKind::ContextOverflow);
        assert_eq!(k(Some(413), "413 status code (no body)"), ProviderErrorKind::ContextOverflow);
        assert_eq!(k(None, "prompt is too long: 213462 tokens > 200000 maximum"), ProviderErrorKind::ContextOverflow);
        // Rate-limit wording is never an overflow.
        assert_eq!(
            k(Some(429), "429: too many tokens, rate limit"),
            ProviderErrorKind::RateLimited { retry_after: None }
        );
        assert_eq!(k(Some(429), "429: {\"code\":\"insufficient_quota\"}"), ProviderErrorKind::InvalidRequest);
        assert_eq!(k(None, "terminated: other side closed"), ProviderErrorKind::Transient);
        assert_eq!(k(None, "Stream ended without finish_reason"), ProviderErrorKind::Transient);
        assert_eq!(k(None, "Provider finish_reason: content_filter"), ProviderErrorKind::InvalidRequest);
        assert_eq!(k(None, "Provider finish_reason: network_error"), ProviderErrorKind::Transient);
        // Status codes only count as whole numbers.
        assert!(!is_retryable_message("request id abc5002"));
        assert!(is_retryable_message("got 503 from upstream"));
        assert!(is_retryable_message("read ECONNRESET"));
        assert!(!is_retryable_message("XECONNRESET_1"));
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut d = HeaderMap::new();
        d.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&d), Some(Duration::ZERO));
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn long_bodies_are_truncated() {
        let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(5000));
        let msg = openai_http_error_message(500, &long);
        assert!(msg.starts_with(r#"500: {"message":"xxx"#), "{}", &msg[..40]);
        assert!(msg.ends_with("xxx... [truncated 1014 chars]"));
        let t = truncate_error_text(&"y".repeat(4010), 4000);
        assert!(t.ends_with("... [truncated 10 chars]"));
    }
}
