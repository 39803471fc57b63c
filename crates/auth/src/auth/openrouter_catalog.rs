//! OpenRouter's catalog as pi 1.6.0 refreshes it: at each network refresh
//! the catalog server is asked (no freshness window, no `etag`), a catalog
//! newer than pi's data is merged over the built-in models, and the result
//! is narrowed to the chat models the user's key may use (`GET
//! <baseUrl>/models/user` with the key, fifteen seconds), with the key's
//! limits and prices; classifier and image models stay. The list is stored
//! whole (`{models, checkedAt}`) and replaces the provider's models.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::file::AuthFile;
use super::model_catalogs::{last_modified, now_ms, parse_catalog, request_catalog, store_entry};
use crate::config::ModelRegistry;
use crate::config::catalog;
use crate::config::stored_catalogs::BUILTIN_DATA_GENERATED_AT_MS;
use crate::config::typed_models::typed_catalog;
use crate::provider::http::HttpClient;

const DEFAULT_BASE_URL: &str = "https://openrouter.ai/api/v1";
const USER_MODELS_TIMEOUT: Duration = Duration::from_secs(15);

/// Refresh `provider`'s (OpenRouter's) stored list, narrowed to `key`'s
/// models (the stored key, or an extension's login: the caller resolves it
/// first, as pi resolves the credential before asking).
pub(super) async fn refresh(
    provider: &str,
    store: &AuthFile,
    registry: &ModelRegistry,
    http: &HttpClient,
    key: Option<String>,
) -> Result<(), String> {
    let answer = request_catalog(http, provider, None).await?;
    let mut remote = Vec::new();
    if !matches!(answer.status.as_u16(), 404 | 501) {
        if !answer.status.is_success() {
            return Err(format!("Model catalog request failed for {provider}: {}", answer.status.as_u16()));
        }
        let models = parse_catalog(provider, &answer.body)?;
        if last_modified(&answer) > BUILTIN_DATA_GENERATED_AT_MS {
            remote = models;
        }
    }
    let builtin = catalog::shared_provider_models(provider)
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .chain(typed_catalog().iter().filter(|m| m.get("provider").and_then(Value::as_str) == Some(provider)).cloned());
    let merged = merge(builtin.collect(), remote);
    let base_url = registry
        .provider_base_url(provider)
        .or_else(|| catalog::provider_base_url(provider))
        .unwrap_or(DEFAULT_BASE_URL);
    let personalized = match key {
        Some(key) => personalize(merged, &key, base_url, http).await?,
        None => merged,
    };
    let entry = Map::from_iter([
        ("models".to_string(), Value::Array(personalized)),
        ("checkedAt".to_string(), json!(now_ms())),
    ]);
    store_entry(store, provider, entry).await
}

fn kind(model: &Value) -> &str {
    model.get("type").and_then(Value::as_str).unwrap_or("chat")
}

fn id(model: &Value) -> &str {
    model.get("id").and_then(Value::as_str).unwrap_or_default()
}

/// `baseline` with `newer` over it (same type and id: the newer one, in the baseline's place).
fn merge(baseline: Vec<Value>, newer: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for model in baseline.into_iter().chain(newer) {
        match merged.iter_mut().find(|m| kind(m) == kind(&model) && id(m) == id(&model)) {
            Some(slot) => *slot = model,
            None => merged.push(model),
        }
    }
    merged
}

/// The chat models of `catalog` the key may use, with its limits and prices.
async fn personalize(catalog: Vec<Value>, key: &str, base_url: &str, http: &HttpClient) -> Result<Vec<Value>, String> {
    let url = format!("{}/models/user", base_url.trim_end_matches('/'));
    let request = http.request(reqwest::Method::GET, &url).map_err(|e| e.message)?;
    let response = request
        .header(reqwest::header::ACCEPT, "application/json")
        .header(reqwest::header::AUTHORIZATION, format!("Bearer {key}"))
        .timeout(USER_MODELS_TIMEOUT)
        .send()
        .await
        .map_err(|e| crate::provider::http::error_chain(&e))?;
    let status = response.status().as_u16();
    if matches!(status, 401 | 403 | 404) {
        return Ok(catalog);
    }
    if !response.status().is_success() {
        return Err(format!("OpenRouter model list request failed: {status}"));
    }
    let body: Value = response.json().await.map_err(|e| crate::provider::http::error_chain(&e))?;
    let Some(data) = body.get("data").and_then(Value::as_array) else {
        return Err("Invalid OpenRouter model list response".to_string());
    };
    let allowed: HashMap<&str, &Value> =
        data.iter().filter_map(|e| e.get("id").and_then(Value::as_str).map(|id| (id, e))).collect();
    Ok(catalog
        .into_iter()
        .filter_map(|mut model| {
            if kind(&model) != "chat" {
                return Some(model);
            }
            let entry = *allowed.get(id(&model))?;
            let positive = |v: Option<&Value>| v.filter(|v| v.as_f64().is_some_and(|n| n != 0.0)).cloned();
            let top = entry.get("top_provider");
            let window =
                positive(top.and_then(|t| t.get("context_length"))).or_else(|| positive(entry.get("context_length")));
            let max = positive(top.and_then(|t| t.get("max_completion_tokens")));
            let object = model.as_object_mut()?;
            if let Some(window) = window {
                object.insert("contextWindow".into(), window);
            }
            if let Some(max) = max {
                object.insert("maxTokens".into(), max);
            }
            if let Some(pricing) = entry.get("pricing") {
                object.insert("cost".into(), cost(pricing));
            }
            Some(model)
        })
        .collect())
}

/// An OpenRouter `$/token` price as `$/1M tokens` (missing, invalid or negative: `fallback`).
fn per_million(value: Option<&Value>, fallback: f64) -> f64 {
    let per_token = match value {
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(Value::Number(n)) => n.as_f64(),
        _ => None,
    };
    match per_token {
        Some(p) if p >= 0.0 => format!("{:.6}", p * 1_000_000.0).parse().unwrap_or(fallback),
        _ => fallback,
    }
}

/// A price as JSON the way pi writes numbers (a whole one without a fraction).
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 { json!(value as i64) } else { json!(value) }
}

/// OpenRouter's prices as pi's model cost; prompt-length overrides as tiers (time-bound ones left out).
fn cost(pricing: &Value) -> Value {
    let rate = |key: &str, fallback: f64| per_million(pricing.get(key), fallback);
    let (input, output) = (rate("prompt", 0.0), rate("completion", 0.0));
    let (cache_read, cache_write) = (rate("input_cache_read", 0.0), rate("input_cache_write", 0.0));
    let mut base = json!({"input": number(input), "output": number(output),
        "cacheRead": number(cache_read), "cacheWrite": number(cache_write)});
    let overrides = pricing.get("overrides").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let tiers: Vec<Value> = overrides
        .iter()
        .filter(|o| {
            o.get("min_prompt_tokens").is_some()
                && ["utc_start", "utc_end", "utc_days"].iter().all(|k| o.get(*k).is_none())
        })
        .map(|o| {
            json!({
                "inputTokensAbove": o.get("min_prompt_tokens"),
                "input": number(per_million(o.get("prompt"), input)),
                "output": number(per_million(o.get("completion"), output)),
                "cacheRead": number(per_million(o.get("input_cache_read"), cache_read)),
                "cacheWrite": number(per_million(o.get("input_cache_write"), cache_write)),
            })
        })
        .collect();
    if !tiers.is_empty()
        && let Some(object) = base.as_object_mut()
    {
        object.insert("tiers".into(), Value::Array(tiers));
    }
    base
}
