//! pi-ai 1.6.0's non-chat APIs: classifiers (`models.classify()`) and image
//! generation (`models.generateImages()`), which codemode scripts call.
//!
//! | API | module |
//! |---|---|
//! | `typesafe-system-one`, `cloudflare-workers-ai-system-one` | [`system_one`] |
//! | `openai-decisions` | [`decisions`] |
//! | `llama-cpp-classify` | [`llama_cpp`] |
//! | `openrouter-images` | [`images`] |
//!
//! A call takes the model as its catalog entry (JSON, base URL resolved), a
//! key, the configured headers, and the script's context; it answers pi's
//! result object (`ClassifierResult` / `ImagesResult`): failures are in it
//! (`stopReason: "error" | "aborted"`, `errorMessage`), never thrown.

use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::classify::{MAX_ERROR_BODY_CHARS, retry_after, truncate_error_text};
use super::http::{HttpClient, transport_error};
use super::lenient;

pub mod decisions;
pub mod images;
pub mod llama_cpp;
pub mod system_one;
pub mod wire;

#[cfg(test)]
mod odd_types;
#[cfg(test)]
mod tests;

/// Retries of a classifier or image request (pi's `maxRetries` default for them).
const MAX_RETRIES: u32 = 2;
/// Longest server-requested retry delay followed (pi's default).
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// One call of a non-chat model.
#[derive(Clone)]
pub struct TypedCall {
    /// The catalog entry, its `baseUrl` resolved (models.json, placeholders).
    pub model: Value,
    pub api_key: Option<String>,
    /// Configured headers (the provider's and the model's), over the API's own.
    pub headers: Vec<(String, String)>,
    pub cancel: CancellationToken,
    pub http: HttpClient,
}

impl TypedCall {
    /// Send the request with a login's credential (pi's request auth): its
    /// key, its headers under the configured ones, its account's base URL.
    pub fn use_login(&mut self, api_key: Option<String>, headers: Vec<(String, String)>, base_url: Option<String>) {
        self.api_key = api_key;
        let configured = std::mem::take(&mut self.headers);
        self.headers = headers.into_iter().chain(configured).collect();
        if let Some(base) = base_url {
            self.model["baseUrl"] = Value::String(base);
        }
    }

    /// The catalog entry's fields (strings `""` when absent or of another type).
    pub fn entry(&self) -> wire::Entry {
        lenient::event_ref(&self.model).unwrap_or_default()
    }

    pub fn id(&self) -> String {
        self.entry().id
    }

    /// Whether the model's catalog entry accepts `modality` as input.
    pub fn accepts(&self, modality: &str) -> bool {
        self.entry().input.iter().any(|m| m == modality)
    }

    /// pi's request headers: the API's own, then the configured ones; later
    /// names win, case-insensitively. No attribution headers: pi 1.6.0's
    /// codemode calls its model registry without a client identity, so
    /// OpenRouter gets no `HTTP-Referer` from them (checked side by side).
    pub fn request_headers(&self, own: &[(&str, String)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut put = |name: &str, value: String| {
            out.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            out.push((name.to_string(), value));
        };
        for (name, value) in own {
            put(name, value.clone());
        }
        for (name, value) in &self.headers {
            put(name, value.clone());
        }
        out
    }

    /// The result's head: `api`, `provider`, `model`, then `field` empty,
    /// `stopReason: "stop"` and the time (pi's key order).
    pub fn result_head(&self, field: &str, empty: Value) -> Map<String, Value> {
        let entry = self.entry();
        let mut out = Map::new();
        out.insert("api".into(), json!(entry.api));
        out.insert("provider".into(), json!(entry.provider));
        out.insert("model".into(), json!(entry.id));
        out.insert(field.into(), empty);
        out.insert("stopReason".into(), json!("stop"));
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        out.insert("timestamp".into(), json!(now.as_millis() as u64));
        out
    }

    /// Mark `out` failed with `message` (aborted when the call was cancelled).
    pub fn fail(&self, out: &mut Map<String, Value>, message: String) {
        let reason = if self.cancel.is_cancelled() { "aborted" } else { "error" };
        out.insert("stopReason".into(), json!(reason));
        out.insert("errorMessage".into(), json!(message));
    }
}

/// A failed request, as pi's error objects carry it: an HTTP status and
/// body when the server answered, else only a message.
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    pub status: Option<u16>,
    pub body: Option<String>,
    pub message: String,
    /// Server-requested delay before a retry.
    retry_after: Option<Duration>,
    /// Whether pi's retry policy retries it (`x-should-retry`, or the status).
    retryable: bool,
}

impl CallError {
    /// An error of the API's own (no status): never retried.
    pub fn plain(message: impl Into<String>) -> CallError {
        CallError { status: None, body: None, message: message.into(), retry_after: None, retryable: false }
    }

    /// pi's `formatProviderError(normalizeProviderError(error), prefix)`: the
    /// status and body when the message does not already carry the body.
    pub fn text(&self, prefix: Option<&str>) -> String {
        let body = self.body.as_deref().map(str::trim).filter(|b| !b.is_empty());
        let body = body.map(|b| truncate_error_text(b, MAX_ERROR_BODY_CHARS));
        match (self.status, body) {
            (Some(status), Some(body)) if !self.message.contains(&body) => match prefix {
                Some(p) => format!("{p} ({status}): {body}"),
                None => format!("{status}: {body}"),
            },
            (Some(status), _) if prefix.is_some() => {
                format!("{} ({status}): {}", prefix.unwrap_or_default(), self.message)
            }
            _ => self.message.clone(),
        }
    }
}

impl From<String> for CallError {
    fn from(message: String) -> CallError {
        CallError::plain(message)
    }
}

impl From<&str> for CallError {
    fn from(message: &str) -> CallError {
        CallError::plain(message)
    }
}

/// The text of a cancelled request (pi's retry helper's).
pub const ABORTED: &str = "Request aborted";

/// pi's retry delay: the server's (`retry-after-ms`, `retry-after`; at most
/// 60 s, else the call fails), else 0.5 s doubling up to 8 s, less up to a quarter.
fn retry_delay(error: &CallError, attempt: u32) -> Result<Duration, CallError> {
    if let Some(delay) = error.retry_after {
        if delay > MAX_RETRY_DELAY {
            let secs = delay.as_secs_f64().ceil() as u64;
            return Err(CallError::plain(format!(
                "Server requested {secs}s retry delay (max: {}s). {}",
                MAX_RETRY_DELAY.as_secs(),
                error.message
            )));
        }
        return Ok(delay);
    }
    let base = (0.5 * 2f64.powi(attempt as i32)).min(8.0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let jitter = f64::from(nanos % 1000) / 1000.0 * 0.25;
    Ok(Duration::from_secs_f64(base * (1.0 - jitter)))
}

/// POST `body` as JSON to `url` and read a JSON answer, with pi's provider
/// retries (`maxRetries` 2: network errors, 408, 409, 429 and 5xx unless
/// `x-should-retry` says otherwise; never the `no_retry` statuses). A non-2xx
/// answer is `"<label> returned <status>"` with the body.
pub async fn post_json(
    call: &TypedCall,
    label: &str,
    url: &str,
    headers: &[(String, String)],
    body: &Value,
    no_retry: &[u16],
) -> Result<Value, CallError> {
    let mut attempt = 0;
    loop {
        let error = match post_once(call, label, url, headers, body).await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if call.cancel.is_cancelled() {
            return Err(CallError::plain(ABORTED));
        }
        let refused = error.status.is_some_and(|s| no_retry.contains(&s));
        if attempt >= MAX_RETRIES || !error.retryable || refused {
            return Err(error);
        }
        let delay = retry_delay(&error, attempt)?;
        attempt += 1;
        tokio::select! {
            _ = call.cancel.cancelled() => return Err(CallError::plain(ABORTED)),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

async fn post_once(
    call: &TypedCall,
    label: &str,
    url: &str,
    headers: &[(String, String)],
    body: &Value,
) -> Result<Value, CallError> {
    let response = match call.http.post_json(url, headers, body, &call.cancel).await {
        Ok(r) => r,
        Err(e) => {
            let retryable = !call.cancel.is_cancelled();
            return Err(CallError { status: None, body: None, message: e.message, retry_after: None, retryable });
        }
    };
    let status = response.status().as_u16();
    let should_retry = response.headers().get("x-should-retry").and_then(|v| v.to_str().ok()).map(str::to_string);
    let delay = retry_after(response.headers());
    let text = response.text().await.map_err(|e| CallError {
        status: None,
        body: None,
        message: transport_error(&e).message,
        retry_after: None,
        retryable: true,
    })?;
    if !(200..300).contains(&status) {
        let retryable = match should_retry.as_deref() {
            Some("true") => true,
            Some("false") => false,
            _ => matches!(status, 408 | 409 | 429) || status >= 500,
        };
        return Err(CallError {
            status: Some(status),
            body: Some(text),
            message: format!("{label} returned {status}"),
            retry_after: delay,
            retryable,
        });
    }
    serde_json::from_str(&text).map_err(|e| CallError::plain(format!("Invalid JSON in the response: {e}")))
}

/// A token count: a positive finite number, truncated; 0 otherwise.
fn tokens(value: Option<f64>) -> u64 {
    value.filter(|n| n.is_finite() && *n > 0.0).map_or(0, |n| n as u64)
}

/// pi's `calculateCost`: the catalog's prices per million tokens, the
/// highest price tier whose `inputTokensAbove` the input exceeds.
pub fn priced_usage(cost: &wire::Cost, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Value {
    let mut rates = cost.rates;
    let mut matched = -1.0;
    let all_input = (input + cache_read + cache_write) as f64;
    for tier in &cost.tiers {
        let above = tier.input_tokens_above.unwrap_or(f64::MAX);
        if all_input > above && above > matched {
            rates = tier.rates;
            matched = above;
        }
    }
    let rate = |r: Option<f64>| r.unwrap_or(0.0) / 1_000_000.0;
    let (ci, co) = (rate(rates.input) * input as f64, rate(rates.output) * output as f64);
    let (cr, cw) = (rate(rates.cache_read) * cache_read as f64, rate(rates.cache_write) * cache_write as f64);
    json!({
        "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": {"input": ci, "output": co, "cacheRead": cr, "cacheWrite": cw, "total": ci + co + cr + cw, "totalFromProvider": false},
    })
}

/// pi's `parseClassifierUsage`: `{input_tokens, output_tokens}`, priced;
/// None when both are missing (the result then has no usage).
pub fn classifier_usage(call: &TypedCall, usage: Option<&wire::ClassifierUsage>) -> Option<Value> {
    let usage = usage?;
    if usage.input_tokens.is_none() && usage.output_tokens.is_none() {
        return None;
    }
    let count = |n: &Option<Value>| tokens(n.as_ref().and_then(Value::as_f64));
    Some(priced_usage(&call.entry().cost, count(&usage.input_tokens), count(&usage.output_tokens), 0, 0))
}

/// A number the API must have sent: `"<label> returned an invalid <field>"` otherwise.
pub fn required_number(label: &str, value: Option<&Value>, field: &str) -> Result<Value, CallError> {
    match value {
        Some(Value::Number(n)) if n.as_f64().is_some_and(f64::is_finite) => Ok(Value::Number(n.clone())),
        _ => Err(CallError::plain(format!("{label} returned an invalid {field}"))),
    }
}

/// `base` without trailing slashes, plus `/path` (pi's `new URL(path, base + "/")`).
pub fn join_url(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// Run a classifier call of `model.api`.
pub async fn classify(call: &TypedCall, context: &Value) -> Value {
    match call.entry().api.as_str() {
        system_one::TYPESAFE_API | system_one::CLOUDFLARE_API => system_one::classify(call, context).await,
        decisions::API => decisions::classify(call, context).await,
        llama_cpp::API => llama_cpp::classify(call, context).await,
        other => {
            let mut out = call.result_head("answers", json!({}));
            call.fail(&mut out, format!("Unsupported classifier API: {other}"));
            Value::Object(out)
        }
    }
}

/// Run an image call of `model.api`.
pub async fn generate_images(call: &TypedCall, context: &Value) -> Value {
    match call.entry().api.as_str() {
        images::API => images::generate(call, context).await,
        other => {
            let mut out = call.result_head("output", json!([]));
            call.fail(&mut out, format!("Unsupported image API: {other}"));
            Value::Object(out)
        }
    }
}
