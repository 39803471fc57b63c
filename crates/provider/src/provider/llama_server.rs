//! pi 1.6.0's llama.cpp provider (a built-in extension of pi-coding-agent):
//! the models a running `llama-server` in router mode lists, turned into the
//! models pi offers. Chat models use `openai-completions` on `<server>/v1`;
//! every listed model is also a classifier: llama.cpp's decision models
//! (`decisions` among their output modalities) answer through
//! `typesafe-system-one` on `<server>/v1`, the others through
//! `llama-cpp-classify` on the server root.
//!
//! The listing reads `GET /models`, `GET /props` (only when an unloaded
//! preset could be autoloaded) and `GET /props?model=…&autoload=false` of
//! each loaded chat model (its chat template tells whether it thinks).

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::http::{HttpClient, error_chain};
use super::lenient;
use super::shared::truthy;

/// The provider id pi gives these models.
pub const PROVIDER: &str = "llama.cpp";
/// Where pi looks when nothing is configured (pi lists no models then).
pub const DEFAULT_SERVER_URL: &str = "http://127.0.0.1:9931";
/// pi's limit for each request of a listing.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// A model's context window when the server tells none.
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The server's URL as pi keeps it: http(s) only, without query, fragment,
/// trailing slashes or a final `/v1`. `None` for anything else.
pub fn normalize_server_url(value: &str) -> Option<String> {
    let value = value.trim();
    let (scheme, rest) = value.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let rest = rest.split(['#', '?']).next().unwrap_or_default();
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if host.is_empty() {
        return None;
    }
    let host = host.to_ascii_lowercase();
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix("/v1").unwrap_or(path);
    Some(format!("{scheme}://{host}{path}"))
}

/// The OpenAI-style base URL of a server (`<server>/v1`).
pub fn inference_url(server: &str) -> String {
    format!("{server}/v1")
}

/// One entry of `GET /models` (only what pi reads). Each field is read
/// leniently: one of an unexpected JSON type reads as absent, as in pi.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Listed {
    #[serde(deserialize_with = "lenient::text")]
    id: String,
    #[serde(deserialize_with = "lenient::object")]
    status: Status,
    #[serde(deserialize_with = "lenient::string")]
    source: Option<String>,
    #[serde(deserialize_with = "lenient::some_object")]
    architecture: Option<Architecture>,
    #[serde(deserialize_with = "lenient::some_object")]
    meta: Option<Meta>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Status {
    #[serde(deserialize_with = "lenient::text")]
    value: String,
    #[serde(deserialize_with = "lenient::any")]
    failed: Option<Value>,
    #[serde(deserialize_with = "lenient::parsed")]
    args: Option<Vec<Value>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Architecture {
    #[serde(deserialize_with = "lenient::parsed")]
    input_modalities: Option<Vec<Value>>,
    #[serde(deserialize_with = "lenient::parsed")]
    output_modalities: Option<Vec<Value>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Meta {
    #[serde(deserialize_with = "lenient::f64")]
    n_ctx: Option<f64>,
    #[serde(deserialize_with = "lenient::f64")]
    n_ctx_train: Option<f64>,
}

fn has(list: Option<&Vec<Value>>, wanted: &str) -> bool {
    list.is_some_and(|l| l.iter().any(|v| v.as_str() == Some(wanted)))
}

impl Listed {
    fn outputs(&self) -> Option<&Vec<Value>> {
        self.architecture.as_ref().and_then(|a| a.output_modalities.as_ref())
    }

    fn inputs(&self) -> Option<&Vec<Value>> {
        self.architecture.as_ref().and_then(|a| a.input_modalities.as_ref())
    }

    fn is_decision(&self) -> bool {
        has(self.outputs(), "decisions")
    }

    fn is_chat(&self) -> bool {
        !self.is_decision() || has(self.outputs(), "text")
    }

    fn failed(&self) -> bool {
        self.status.failed.as_ref().is_some_and(truthy)
    }

    fn autoload_candidate(&self) -> bool {
        self.status.value == "unloaded" && self.source.as_deref() == Some("preset")
    }

    /// pi lists loaded and sleeping models (a request wakes a sleeping one),
    /// and unloaded presets when the router loads models on first use.
    fn selectable(&self, autoload: bool) -> bool {
        matches!(self.status.value.as_str(), "loaded" | "sleeping")
            || (autoload && self.autoload_candidate() && !self.failed())
    }

    /// The running context, else `--ctx-size`/`-c`/`-ctx` of the preset's
    /// arguments, else the last listing's, else the training context.
    fn context_window(&self, cached: Option<u64>) -> u64 {
        let positive = |n: Option<f64>| n.filter(|n| *n > 0.0).map(|n| n as u64);
        if let Some(n) = positive(self.meta.as_ref().and_then(|m| m.n_ctx)) {
            return n;
        }
        let args = self.status.args.as_deref().unwrap_or_default();
        for pair in args.windows(2) {
            if !matches!(pair[0].as_str(), Some("--ctx-size" | "-c" | "-ctx")) {
                continue;
            }
            if let Some(n) = pair[1].as_str().and_then(|s| s.trim().parse::<u64>().ok()).filter(|n| *n > 0) {
                return n;
            }
        }
        if let Some(n) = cached.filter(|n| *n > 0) {
            return n;
        }
        positive(self.meta.as_ref().and_then(|m| m.n_ctx_train)).unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }
}

fn zero_cost() -> Value {
    json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0})
}

/// A chat model as pi builds it (`chat_template` from the model's `/props`).
fn chat_model(model: &Listed, server: &str, chat_template: Option<&str>, cached: Option<u64>) -> Value {
    let context = model.context_window(cached);
    let reasoning = chat_template.is_some_and(|t| t.contains("enable_thinking"));
    let mut out = Map::new();
    out.insert("id".into(), json!(model.id));
    out.insert("name".into(), json!(model.id));
    out.insert("api".into(), json!("openai-completions"));
    out.insert("provider".into(), json!(PROVIDER));
    out.insert("baseUrl".into(), json!(inference_url(server)));
    out.insert("reasoning".into(), json!(reasoning));
    if reasoning {
        out.insert(
            "thinkingLevelMap".into(),
            json!({"off": "off", "minimal": null, "low": null, "medium": "medium", "high": null, "xhigh": null}),
        );
    }
    let image = has(model.inputs(), "image");
    out.insert("input".into(), if image { json!(["text", "image"]) } else { json!(["text"]) });
    out.insert("cost".into(), zero_cost());
    out.insert("contextWindow".into(), json!(context));
    out.insert("maxTokens".into(), json!(context));
    let mut compat = json!({
        "supportsStore": false,
        "supportsReasoningEffort": false,
        "supportsUsageInStreaming": true,
        "supportsStrictMode": false,
        "maxTokensField": "max_tokens",
    });
    if reasoning {
        compat["thinkingFormat"] = json!("qwen-chat-template");
    }
    out.insert("compat".into(), compat);
    Value::Object(out)
}

/// A classifier model as pi builds it.
fn classifier_model(model: &Listed, server: &str, cached: Option<u64>) -> Value {
    let decision = model.is_decision();
    let image = decision && has(model.inputs(), "image");
    let mut out = Map::new();
    out.insert("type".into(), json!("classifier"));
    out.insert("id".into(), json!(model.id));
    out.insert("name".into(), json!(model.id));
    let (api, base) =
        if decision { ("typesafe-system-one", inference_url(server)) } else { ("llama-cpp-classify", server.into()) };
    out.insert("api".into(), json!(api));
    out.insert("provider".into(), json!(PROVIDER));
    out.insert("baseUrl".into(), json!(base));
    out.insert("input".into(), if image { json!(["text", "image"]) } else { json!(["text"]) });
    out.insert("cost".into(), zero_cost());
    out.insert("contextWindow".into(), json!(model.context_window(cached)));
    if image {
        out.insert("compat".into(), json!({"imageInput": "images", "sendImageOptInHeader": false}));
    }
    Value::Object(out)
}

/// A listing that failed: pi's texts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ListError(pub String);

/// The client of one server.
pub struct LlamaServer<'a> {
    pub http: &'a HttpClient,
    /// The normalised server URL ([`normalize_server_url`]).
    pub url: &'a str,
    /// Sent as `Authorization: Bearer` (pi sends `local` when none is configured).
    pub key: &'a str,
}

impl LlamaServer<'_> {
    async fn get(&self, path: &str) -> Result<Value, ListError> {
        let url = format!("{}{path}", self.url);
        let unreachable = |e: &(dyn std::error::Error + 'static)| {
            ListError(format!("Could not reach llama.cpp server at {}: {}", self.url, error_chain(e)))
        };
        let mut request =
            self.http.request(reqwest::Method::GET, &url).map_err(|e| unreachable(&e))?.timeout(REQUEST_TIMEOUT);
        if !self.key.is_empty() {
            request = request.bearer_auth(self.key);
        }
        let response = request.send().await.map_err(|e| unreachable(&e))?;
        let status = response.status();
        let payload: Option<Value> = response.bytes().await.ok().and_then(|body| serde_json::from_slice(&body).ok());
        if !status.is_success() {
            let message = payload
                .as_ref()
                .and_then(|p| p.pointer("/error/message"))
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| format!("llama.cpp returned HTTP {}", status.as_u16()));
            return Err(ListError(message));
        }
        Ok(payload.unwrap_or(Value::Null))
    }

    async fn list(&self) -> Result<Vec<Listed>, ListError> {
        let payload = self.get("/models").await?;
        let Some(Value::Array(data)) = payload.get("data") else {
            return Err(ListError("llama.cpp returned an invalid model catalog".into()));
        };
        let well_formed = |v: &Value| {
            v.get("id").is_some_and(Value::is_string) && v.pointer("/status/value").is_some_and(Value::is_string)
        };
        if !data.iter().all(well_formed) {
            return Err(ListError("Server is not running in llama.cpp router mode".into()));
        }
        Ok(data.iter().map(|v| serde_json::from_value(v.clone()).unwrap_or_default()).collect())
    }

    /// Whether the router loads models on first use (asked only when it matters).
    async fn autoload(&self, listed: &[Listed]) -> bool {
        if !listed.iter().any(Listed::autoload_candidate) {
            return false;
        }
        match self.get("/props").await {
            Ok(props) => props.get("models_autoload") == Some(&Value::Bool(true)),
            Err(_) => false,
        }
    }

    async fn chat_template(&self, model: &str) -> Result<Option<String>, ListError> {
        let query: String = form_urlencoded(&[("model", model), ("autoload", "false")]);
        let props = self.get(&format!("/props?{query}")).await?;
        Ok(props.get("chat_template").and_then(Value::as_str).map(str::to_string))
    }

    /// The server's models as pi lists them: chat models first, then every
    /// selectable model as a classifier. `cached` holds the context windows
    /// of the last listing (used when the server tells none now).
    pub async fn models(&self, cached: &HashMap<String, u64>) -> Result<Vec<Value>, ListError> {
        let listed = self.list().await?;
        let autoload = self.autoload(&listed).await;
        let selectable: Vec<&Listed> = listed.iter().filter(|m| m.selectable(autoload)).collect();
        let chats = selectable.iter().filter(|m| m.is_chat()).map(|m| async move {
            let template = if m.status.value == "loaded" { self.chat_template(&m.id).await? } else { None };
            Ok::<Value, ListError>(chat_model(m, self.url, template.as_deref(), cached.get(&m.id).copied()))
        });
        let mut out = Vec::new();
        for chat in futures::future::join_all(chats).await {
            out.push(chat?);
        }
        out.extend(selectable.iter().map(|m| classifier_model(m, self.url, cached.get(&m.id).copied())));
        Ok(out)
    }
}

/// `application/x-www-form-urlencoded` pairs, as JavaScript's `URLSearchParams` writes them.
fn form_urlencoded(pairs: &[(&str, &str)]) -> String {
    let encode = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b as char),
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls_are_normalised_as_pi_does() {
        assert_eq!(normalize_server_url(" http://127.0.0.1:8080/v1/ ").as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(normalize_server_url("HTTPS://Box/llama/v1?x=1#y").as_deref(), Some("https://box/llama"));
        assert_eq!(normalize_server_url("ftp://box"), None);
        assert_eq!(normalize_server_url("box:8080"), None);
        assert_eq!(
            form_urlencoded(&[("model", "org/m:Q4 K"), ("autoload", "false")]),
            "model=org%2Fm%3AQ4+K&autoload=false"
        );
    }

    #[test]
    fn listed_models_become_pi_s_chat_and_classifier_models() {
        let listed: Listed = serde_json::from_value(json!({
            "id": "qwen", "status": {"value": "loaded", "args": ["llama-server", "-c", "4096"]},
            "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["text"]},
            "meta": {"n_ctx_train": 32768}
        }))
        .unwrap_or_default();
        let chat = chat_model(&listed, "http://h", Some("{% if enable_thinking %}"), None);
        assert_eq!(chat["contextWindow"], 4096);
        assert_eq!(chat["baseUrl"], "http://h/v1");
        assert_eq!(chat["compat"]["thinkingFormat"], "qwen-chat-template");
        assert_eq!(chat["input"], json!(["text", "image"]));
        let classifier = classifier_model(&listed, "http://h", None);
        assert_eq!(classifier["api"], "llama-cpp-classify");
        assert_eq!(classifier["baseUrl"], "http://h");
        assert_eq!(classifier["input"], json!(["text"]));
        let decision: Listed = serde_json::from_value(json!({
            "id": "d", "status": {"value": "sleeping"},
            "architecture": {"input_modalities": ["image"], "output_modalities": ["decisions"]}
        }))
        .unwrap_or_default();
        assert!(!decision.is_chat());
        let classifier = classifier_model(&decision, "http://h", Some(9));
        assert_eq!(classifier["api"], "typesafe-system-one");
        assert_eq!(classifier["contextWindow"], 9);
        assert_eq!(classifier["compat"]["imageInput"], "images");
        let odd: Listed = serde_json::from_value(json!({
            "id": "odd", "status": {"value": "loaded", "args": "-c 5"}, "architecture": {"output_modalities": "text"},
            "meta": {"n_ctx": "big", "n_ctx_train": 4096}
        }))
        .unwrap_or_default();
        assert_eq!((odd.id.as_str(), odd.is_chat(), odd.context_window(None)), ("odd", true, 4096));
        let unloaded: Listed =
            serde_json::from_value(json!({"id": "p", "status": {"value": "unloaded"}, "source": "preset"}))
                .unwrap_or_default();
        assert!(unloaded.selectable(true) && !unloaded.selectable(false));
        assert_eq!(unloaded.context_window(None), DEFAULT_CONTEXT_WINDOW);
    }
}
