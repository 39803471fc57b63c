//! pi's `ModelRuntime` over files an extension names
//! (`ModelRuntime.create({authPath, modelsPath})`, the `modelStore` library
//! function): pi-rpc's catalog with that `models.json` and that `auth.json`
//! (pi's formats, read by pi-rpc's config crate), the runtime's own API keys
//! over them (`setRuntimeApiKey`, kept by the extension host for that runtime
//! only), its credentials listed, stored (a login) and removed (`logout`)
//! in that `auth.json` under pi's lock by pi-rpc's auth crate. pi-rpc's own
//! runtime (no files named) lists, stores and removes in its own `auth.json`
//! the same way.
//!
//! `{"fn": "modelStore", "args": [store, op, ...]}`, `store` being
//! `{authPath, modelsPath (null: no models.json), runtimeKeys: {provider: key}}`,
//! or, for a runtime over a caller's `CredentialStore` (pi's `credentials`
//! option, read and written by the host), `credentials: {provider: credential}`
//! in `auth.json`'s shape in place of `authPath`. `refreshOAuth` (`[provider,
//! credential]`) refreshes an OAuth credential that expires soon, for the host
//! to save in that store.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::auth::file::AuthFile;
use crate::auth::{broker, oauth};
use crate::config::auth::AuthStore;
use crate::config::models::{ModelRegistry, ProviderAuth};
use crate::model::Model;

/// A model as pi's `Model` object (without its request headers).
pub(crate) fn model_json(model: &Model) -> Value {
    let mut value = serde_json::to_value(model).unwrap_or(Value::Null);
    if let Some(obj) = value.as_object_mut() {
        obj.remove("headers");
    }
    value
}

fn text(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or_default()
}

/// The registry of `store`'s files (or of its `credentials`, a caller's
/// store read by the host), its runtime keys applied.
fn registry_of(store: &Value) -> Result<ModelRegistry, String> {
    let models = store.get("modelsPath").and_then(Value::as_str).map(PathBuf::from);
    let mut registry = match store.get("credentials") {
        Some(Value::Object(entries)) => {
            ModelRegistry::load_with_auth(models.as_deref(), AuthStore::from_entries(entries.clone()))
        }
        _ => {
            let auth = PathBuf::from(text(store.get("authPath")));
            ModelRegistry::load_files(models.as_deref(), &auth).map_err(|e| e.to_string())?
        }
    };
    if let Some(keys) = store.get("runtimeKeys").and_then(Value::as_object) {
        for (provider, key) in keys {
            if let Some(key) = key.as_str() {
                registry.set_runtime_key(provider, key.to_string());
            }
        }
    }
    Ok(registry)
}

/// pi's `CredentialInfo` list of an `auth.json`: `{providerId, type}` in the file's order.
async fn credentials(path: &Path) -> Result<Value, String> {
    let stored = AuthFile::new(path.to_path_buf()).read().await.map_err(|e| e.to_string())?;
    let list = stored.iter().map(|(provider, credential)| {
        let kind = credential.get("type").and_then(Value::as_str).unwrap_or("api_key");
        json!({"providerId": provider, "type": kind})
    });
    Ok(Value::Array(list.collect()))
}

/// `{value: credential}`: `credential` (an OAuth login of `provider`)
/// refreshed by pi-rpc's flow of the provider when it has less than pi's
/// five minutes left, else as it is (`{}`: not an OAuth credential).
async fn refresh_oauth(provider: &str, credential: &Value) -> Result<Value, String> {
    if !oauth::is_oauth(credential) {
        return Ok(json!({}));
    }
    let Some(flow) = oauth::flow(provider).filter(|_| broker::expires_soon(credential)) else {
        return Ok(json!({ "value": credential }));
    };
    let refreshed = tokio::time::timeout(broker::REFRESH_TIMEOUT, flow.refresh(&oauth::Net::new(), credential))
        .await
        .map_err(|_| format!("OAuth refresh failed for {provider}: timed out"))?
        .map_err(|e| format!("OAuth refresh failed for {provider}: {e}"))?;
    let mut refreshed = refreshed;
    if let Some(obj) = refreshed.as_object_mut() {
        obj.insert("type".to_string(), json!("oauth"));
    }
    Ok(json!({ "value": refreshed }))
}

/// Answer `op` of a `modelStore` call.
pub(crate) async fn call(args: &[Value]) -> Result<Value, String> {
    let store = args.first().cloned().unwrap_or(Value::Null);
    let op = text(args.get(1));
    let rest = args.get(2..).unwrap_or_default();
    let auth_path = PathBuf::from(text(store.get("authPath")));
    if op == "refreshOAuth" {
        return refresh_oauth(text(rest.first()), rest.get(1).unwrap_or(&Value::Null)).await;
    }
    if auth_path.as_os_str().is_empty() && !store.get("credentials").is_some_and(Value::is_object) {
        return Err("modelStore: no authPath".to_string());
    }
    match op {
        "listCredentials" => return credentials(&auth_path).await,
        // A login's credential, written as pi's `modify(provider, () => credential)`.
        "store" => {
            let provider = text(rest.first());
            let credential = rest.get(1).cloned().filter(Value::is_object).ok_or("store: no credential")?;
            let file = AuthFile::new(auth_path);
            let stored = file.modify(provider, |_| async move { Ok::<_, String>(Some(credential)) }).await;
            return stored.map_err(|e| e.to_string())?.map(|c| c.unwrap_or(Value::Null));
        }
        "logout" => {
            let provider = text(rest.first());
            let removed = crate::auth::login::logout(&auth_path, provider).await.map_err(|e| e.to_string())?;
            return Ok(json!(removed.is_some()));
        }
        _ => {}
    }
    let mut registry = registry_of(&store)?;
    let arg = |i: usize| text(rest.get(i));
    let value = match op {
        "getAll" => Some(Value::Array(registry.all().iter().map(model_json).collect())),
        // A runtime over other files has no offline `faux` model to fall back on.
        "getAvailable" => {
            let available = registry.available();
            Some(Value::Array(available.iter().filter(|m| m.provider != "faux").map(model_json).collect()))
        }
        "find" => registry.find(arg(0), arg(1)).map(|m| model_json(&m)),
        "getError" => registry.config_error().map(|e| json!(e)),
        other => registry_answer(&registry, other, rest).ok_or_else(|| format!("modelStore: no op {other}"))?,
    };
    Ok(value.map_or_else(|| json!({}), |value| json!({ "value": value })))
}

/// pi's answers of `registry` (pi-rpc's own, or one over other files: pi's
/// `ModelRuntime.create({authPath, modelsPath})`) to `getProvider`,
/// `getProviderAuth`, `getProviderAuthStatus`, `getApiKeyAndHeaders` and `loginMethods`:
/// `Some(None)` for pi's undefined, `None` for the other ops.
pub(crate) fn registry_answer(registry: &ModelRegistry, op: &str, args: &[Value]) -> Option<Option<Value>> {
    let provider = args.first().and_then(Value::as_str).unwrap_or_default();
    Some(match op {
        "getProvider" => registry.clone().provider_info(provider).map(|p| {
            let mut info = json!({"id": p.id, "name": p.name, "baseUrl": p.base_url, "oauth": p.oauth, "configured": p.configured});
            if p.configured {
                info["config"] = provider_config_json(registry, provider);
            }
            info
        }),
        "getProviderAuth" => registry.provider_auth(provider).map(|a| provider_auth_json(registry, provider, a)),
        "getProviderAuthStatus" => {
            let status = registry.provider_auth_status(provider);
            let mut out = json!({"configured": status.configured});
            if let Some(source) = status.source {
                out["source"] = json!(source);
            }
            if let Some(label) = status.label {
                out["label"] = json!(label);
            }
            Some(out)
        }
        "getApiKeyAndHeaders" => Some(api_key_and_headers(registry, args.first().unwrap_or(&Value::Null))),
        // pi's provider order: `{builtin}` (sorted by id), then the `others` in models.json's order.
        "getProviderIds" => {
            let (builtin, others) = provider_ids(registry);
            Some(json!({"builtin": builtin, "others": others}))
        }
        // `{apiKey, oauth}`: the logins pi offers for the provider (OAuth: pi-rpc has its flow).
        "loginMethods" => {
            let methods = registry.login_methods(provider, oauth::flow(provider).is_some());
            Some(json!({"apiKey": methods.api_key, "oauth": methods.oauth}))
        }
        _ => return None,
    })
}

/// What `models.json` and extensions' registrations configure for
/// `provider`, as pi's provider composer reads it over a built-in provider:
/// `{name?, baseUrl?, apiKey?, headers?, authHeader?}` (config values as written).
fn provider_config_json(registry: &ModelRegistry, provider: &str) -> Value {
    let mut config = serde_json::Map::new();
    if let Some(settings) = registry.provider_settings(provider) {
        if let Some(name) = &settings.name {
            config.insert("name".into(), json!(name));
        }
        if let Some(base_url) = &settings.base_url {
            config.insert("baseUrl".into(), json!(base_url));
        }
        if let Some(api_key) = &settings.api_key {
            config.insert("apiKey".into(), json!(api_key));
        }
        if !settings.headers.is_empty() {
            config.insert("headers".into(), Value::Object(settings.headers.clone()));
        }
        if settings.auth_header {
            config.insert("authHeader".into(), json!(true));
        }
    }
    // An extension's own `models` are the provider's, in its order (pi's composer): `type:id` each.
    let registered = registry.extension_provider_config(provider).and_then(|c| c.get("models"));
    if let Some(models) = registered.and_then(Value::as_array) {
        let text = |m: &Value, key: &str| m.get(key).and_then(Value::as_str).map(str::to_string);
        let order: Vec<String> = models
            .iter()
            .map(|m| {
                format!("{}:{}", text(m, "type").unwrap_or_else(|| "chat".into()), text(m, "id").unwrap_or_default())
            })
            .collect();
        config.insert("modelOrder".into(), json!(order));
    }
    Value::Object(config)
}

/// The ids of `registry`'s providers in the order of pi's `getProviders()`:
/// every built-in provider of pi-ai's (TypeSafe's, classifiers alone,
/// included), then those only `models.json` (or an extension) brings, as
/// their models come.
fn provider_ids(registry: &ModelRegistry) -> (Vec<String>, Vec<String>) {
    let mut builtin: Vec<String> =
        crate::config::catalog::BUILTIN_PROVIDERS.iter().map(|p| p.name.to_string()).collect();
    builtin.sort();
    let others = registry.loaded_providers().into_iter();
    let others = others.filter(|id| id != crate::provider::faux::FAUX_PROVIDER && !builtin.contains(id)).collect();
    (builtin, others)
}

/// pi's `AuthResult` of `provider`: `{auth: {apiKey?, headers?}, env?, source}`.
/// Cloud credentials pi's providers resolve themselves bring no key (pi-rpc's
/// stand-in is left out); the variables stored with the credential come as
/// `env`; Cloudflare's AI Gateway sends its key as `cf-aig-authorization`,
/// with neither `Authorization` nor `x-api-key`, as pi's gateway auth says.
fn provider_auth_json(registry: &ModelRegistry, provider: &str, resolved: ProviderAuth) -> Value {
    let mut auth = serde_json::Map::new();
    let key = resolved.api_key.filter(|k| !crate::provider::ambient::is_placeholder(k));
    let mut headers = serde_json::Map::new();
    for (name, value) in &resolved.headers {
        headers.insert(name.clone(), json!(value));
    }
    match key {
        Some(key) if provider == crate::provider::cloudflare::AI_GATEWAY => {
            headers.insert("cf-aig-authorization".to_string(), json!(format!("Bearer {key}")));
            headers.insert("Authorization".to_string(), Value::Null);
            headers.insert("x-api-key".to_string(), Value::Null);
        }
        Some(key) => {
            auth.insert("apiKey".to_string(), Value::String(key));
        }
        None => {}
    }
    if !headers.is_empty() {
        auth.insert("headers".to_string(), Value::Object(headers));
    }
    let mut out = json!({"auth": auth});
    let env = registry.provider_env(provider);
    if !env.stored().is_empty() {
        out["env"] = json!(env.stored());
    }
    out["source"] = json!(resolved.source);
    out
}

/// pi's `modelRegistry.getApiKeyAndHeaders(model)`: `{ok: true, auth:
/// true, apiKey?, headers?, env?}` with the provider's request auth (`env`:
/// the variables stored with its `auth.json` credential); without credentials,
/// the model's and provider's configured headers (undefined when none),
/// or pi's `{ok: false, error}` when the provider sends its key as a
/// bearer header (`authHeader`).
fn api_key_and_headers(registry: &ModelRegistry, model: &Value) -> Value {
    let provider = model.get("provider").and_then(Value::as_str).unwrap_or_default();
    let mut out = json!({"ok": true});
    if let Some(auth) = registry.provider_auth(provider) {
        out["auth"] = json!(true);
        let env = registry.provider_env(provider);
        if !env.stored().is_empty() {
            out["env"] = json!(env.stored());
        }
        if let Some(key) = auth.api_key {
            out["apiKey"] = json!(key);
        }
        if !auth.headers.is_empty() {
            out["headers"] = json!(auth.headers);
        }
        return out;
    }
    if registry.auth_header(provider) {
        return json!({"ok": false, "error": format!("No API key found for \"{provider}\"")});
    }
    // The model's own headers and the provider's configured ones.
    let headers = match serde_json::from_value::<Model>(model.clone()) {
        Ok(model) => json!(registry.headers(&model)),
        Err(_) => model.get("headers").cloned().unwrap_or_else(|| json!({})),
    };
    if headers.as_object().is_some_and(|h| !h.is_empty()) {
        out["headers"] = headers;
    }
    out
}
