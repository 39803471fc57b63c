//! pi 1.6.0's refresh of the built-in providers' model catalogs: each
//! built-in provider with credentials (pi-ai's, TypeSafe's classifiers
//! included: [`stored_catalogs::catalog_providers`]) asks pi's catalog server
//! (`GET https://pi.dev/api/models/providers/<id>?types=chat,image,classifier`,
//! pi's `User-Agent`, four seconds an attempt, two retries on a transport
//! failure or a 408/425/429/5xx) and the answer is kept in the agent
//! directory's `models-store.json` under pi's lock ([`super::file`]), where
//! pi and pi-rpc share it. A provider checked less than four hours ago is
//! not asked again unless forced (`pi update --models`); a stored catalog is
//! revalidated with its `etag` (a 304 only moves `checkedAt`); a 404/501
//! keeps an entry dated 0; another failure keeps the stored body and is the
//! provider's error (`Model catalog request failed for <id>: <status>`).
//! OpenRouter's catalog is narrowed to the user's key ([`super::openrouter_catalog`]).
//! The session's registry reads what is stored
//! ([`crate::config::stored_catalogs`]). Tests send pi.dev's requests to a
//! local server with `PI_RPC_ORIGIN_OVERRIDES`.

use std::path::Path;
use std::time::Duration;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Map, Value, json};

use super::file::AuthFile;
use crate::config::ModelRegistry;
use crate::config::stored_catalogs::{self, PERSONALIZED, store_path};
use crate::provider::http::HttpClient;

/// pi's catalog server.
pub const CATALOG_ORIGIN: &str = "https://pi.dev";
/// The pi version the catalog server is told (it serves catalogs for that version).
const PI_VERSION: &str = "1.6.0";
/// The model types asked for.
const MODEL_TYPES: &str = "chat,image,classifier";
/// Longest wait for one attempt.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);
/// Attempts after the first one.
const MAX_RETRIES: usize = 2;
const RETRYABLE: [u16; 7] = [408, 425, 429, 500, 502, 503, 504];
/// How long a checked catalog is not asked again (unless forced).
pub(super) const REFRESH_INTERVAL_MS: i64 = 4 * 60 * 60 * 1000;
/// How long pi lets a refresh run (RPC mode's start, `pi update --models`).
pub const REFRESH_TIMEOUT: Duration = Duration::from_secs(15);

/// A refresh's failures, by provider (pi's `refresh().errors`).
pub type Failures = Vec<(String, String)>;

/// OpenRouter's key for its refresh when an extension logs in to OpenRouter
/// (pi's provider then has the extension's OAuth): the stored login, refreshed
/// through the extension first when expired. Asked before the catalog, as pi
/// resolves the credential first; `Ok(None)`: no such login (the stored key
/// is used), `Err`: the refresh failed (nothing is asked or stored).
pub type KeySource = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Option<String>, String>> + Send>>;

/// Refresh the catalog of each built-in provider that has credentials in
/// `agent_dir`; `force` asks even when checked recently (`pi update --models`).
pub async fn refresh(agent_dir: &Path, http: &HttpClient, force: bool) -> Failures {
    let registry = match ModelRegistry::load(agent_dir) {
        Ok(registry) => registry,
        Err(e) => return vec![("auth.json".to_string(), e.to_string())],
    };
    let store = AuthFile::new(store_path(agent_dir));
    let asked = usable_providers(&registry).into_iter().map(|provider| {
        let (store, registry) = (&store, &registry);
        async move { refresh_one(provider, store, registry, http, force, registry.api_key(provider)).await.err() }
    });
    join_all(asked).await.into_iter().flatten().collect()
}

/// The built-in providers whose catalog is refreshed: those with credentials.
pub(super) fn usable_providers(registry: &ModelRegistry) -> Vec<&'static str> {
    let mut providers = stored_catalogs::catalog_providers();
    providers.retain(|p| registry.provider_usable(p));
    providers
}

/// Refresh `provider`'s catalog; `key` narrows OpenRouter's list (pi's
/// personalized catalog). A failure is `(provider, message)`.
pub(super) async fn refresh_one(
    provider: &str,
    store: &AuthFile,
    registry: &ModelRegistry,
    http: &HttpClient,
    force: bool,
    key: Option<String>,
) -> Result<(), (String, String)> {
    let done = if PERSONALIZED.contains(&provider) {
        super::openrouter_catalog::refresh(provider, store, registry, http, key).await
    } else {
        refresh_provider(provider, store, http, force).await
    };
    done.map_err(|e| (provider.to_string(), e))
}

/// pi's `provider: message` list of failures.
pub fn describe(failures: &Failures) -> String {
    failures.iter().map(|(provider, message)| format!("{provider}: {message}")).collect::<Vec<_>>().join("; ")
}

/// Milliseconds since the epoch.
pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// pi's `User-Agent` for its own requests (`pi/<version> (<platform>; <runtime>; <arch>)`).
fn user_agent() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("pi/{PI_VERSION} ({}; pi-rpc/{}; {arch})", std::env::consts::OS, env!("CARGO_PKG_VERSION"))
}

/// A response: status, headers and body.
pub(super) struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

/// `GET url` with pi's bounded retry (each attempt limited, body included).
async fn get_with_retry(http: &HttpClient, url: &str, etag: Option<&str>) -> Result<Answer, String> {
    let client = http.client().map_err(|e| e.message.clone())?;
    let target = http.target(url);
    let mut attempt = 0;
    loop {
        let mut request = client
            .get(target.as_str())
            .header(reqwest::header::ACCEPT, "application/json")
            .header(reqwest::header::USER_AGENT, user_agent())
            .timeout(ATTEMPT_TIMEOUT);
        if let Some(etag) = etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        let sent = async {
            let response = request.send().await?;
            let (status, headers) = (response.status(), response.headers().clone());
            Ok::<_, reqwest::Error>(Answer { status, headers, body: response.bytes().await?.to_vec() })
        };
        match sent.await {
            Ok(answer) if !(RETRYABLE.contains(&answer.status.as_u16()) && attempt < MAX_RETRIES) => return Ok(answer),
            Ok(_) => {}
            Err(e) if attempt >= MAX_RETRIES => {
                // pi's (undici's) words for a request that got no answer.
                tracing::debug!("{url}: {}", crate::provider::http::error_chain(&e));
                let aborted = e.is_timeout();
                return Err(
                    if aborted { "The operation was aborted due to timeout" } else { "fetch failed" }.to_string()
                );
            }
            Err(_) => {}
        }
        attempt += 1;
    }
}

/// The catalog server's answer for `provider`.
pub(super) async fn request_catalog(http: &HttpClient, provider: &str, etag: Option<&str>) -> Result<Answer, String> {
    let url = format!("{CATALOG_ORIGIN}/api/models/providers/{provider}?types={}", MODEL_TYPES.replace(',', "%2C"));
    get_with_retry(http, &url, etag).await
}

/// A catalog answer's models (an array, `{models}` or an object of models),
/// of the types pi knows, each given the provider's id.
pub(super) fn parse_catalog(provider: &str, body: &[u8]) -> Result<Vec<Value>, String> {
    let invalid = || format!("Invalid model catalog for provider \"{provider}\"");
    let value: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let entries: Vec<Value> = match value {
        Value::Array(list) => list,
        Value::Object(mut map) => match map.remove("models") {
            Some(Value::Array(list)) => list,
            Some(other) => {
                map.insert("models".into(), other);
                map.into_iter().map(|(_, v)| v).collect()
            }
            None => map.into_iter().map(|(_, v)| v).collect(),
        },
        _ => return Err(invalid()),
    };
    Ok(entries
        .into_iter()
        .filter_map(|entry| match entry {
            Value::Object(mut model) if model.contains_key("id") => {
                let known = match model.get("type") {
                    None => true,
                    Some(t) => t.as_str().is_some_and(|t| ["chat", "image", "classifier"].contains(&t)),
                };
                known.then(|| {
                    model.insert("provider".into(), json!(provider));
                    Value::Object(model)
                })
            }
            _ => None,
        })
        .collect())
}

/// A successful answer's `Last-Modified` in milliseconds (0 when missing or invalid).
pub(super) fn last_modified(answer: &Answer) -> i64 {
    answer
        .headers
        .get(reqwest::header::LAST_MODIFIED)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| chrono::DateTime::parse_from_rfc2822(v).ok())
        .map(|t| t.timestamp_millis())
        .unwrap_or(0)
}

/// Store `entry` as `provider`'s under pi's lock.
pub(super) async fn store_entry(store: &AuthFile, provider: &str, entry: Map<String, Value>) -> Result<(), String> {
    let written = store.modify(provider, |_| async move { Ok::<_, String>(Some(Value::Object(entry))) }).await;
    written.map_err(|e| e.to_string())?.map(|_| ())
}

/// One built-in provider's refresh, as pi's remote catalog does it.
async fn refresh_provider(provider: &str, store: &AuthFile, http: &HttpClient, force: bool) -> Result<(), String> {
    let stored = store.get(provider).await.map_err(|e| e.to_string())?;
    let stored = stored.and_then(|v| match v {
        Value::Object(map) => Some(map),
        _ => None,
    });
    let number = |key: &str| stored.as_ref().and_then(|s| s.get(key)).and_then(Value::as_f64);
    if let (false, Some(checked), Some(_)) = (force, number("checkedAt"), number("lastModified"))
        && (now_ms() as f64) - checked < REFRESH_INTERVAL_MS as f64
    {
        return Ok(());
    }
    let has_models =
        stored.as_ref().and_then(|s| s.get("models")).and_then(Value::as_array).is_some_and(|m| !m.is_empty());
    let etag = stored.as_ref().filter(|_| has_models).and_then(|s| s.get("etag")).and_then(Value::as_str);
    let answer = request_catalog(http, provider, etag).await?;
    let checked_at = json!(now_ms());
    let kept = || stored.clone().unwrap_or_else(|| Map::from_iter([("models".to_string(), json!([]))]));
    match answer.status.as_u16() {
        304 if stored.is_some() => {
            let mut entry = kept();
            entry.insert("checkedAt".into(), checked_at);
            store_entry(store, provider, entry).await
        }
        404 | 501 => {
            let mut entry = kept();
            entry.insert("checkedAt".into(), checked_at);
            entry.insert("lastModified".into(), json!(0));
            entry.remove("etag");
            store_entry(store, provider, entry).await
        }
        _ if !answer.status.is_success() => {
            let mut entry = kept();
            entry.insert("checkedAt".into(), checked_at);
            store_entry(store, provider, entry).await?;
            Err(format!("Model catalog request failed for {provider}: {}", answer.status.as_u16()))
        }
        _ => {
            let models = parse_catalog(provider, &answer.body)?;
            let mut entry = Map::new();
            entry.insert("models".into(), Value::Array(models));
            entry.insert("lastModified".into(), json!(last_modified(&answer)));
            if let Some(etag) = answer.headers.get(reqwest::header::ETAG).and_then(|v| v.to_str().ok()) {
                entry.insert("etag".into(), json!(etag));
            }
            entry.insert("checkedAt".into(), checked_at);
            store_entry(store, provider, entry).await
        }
    }
}
