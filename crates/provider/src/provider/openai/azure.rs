//! The `azure-openai-responses` wire API: the Responses API of an Azure
//! OpenAI resource, as pi 1.6.0 calls it through the OpenAI SDK's
//! `AzureOpenAI` client.
//!
//! * Endpoint: `AZURE_OPENAI_BASE_URL`, else
//!   `https://$AZURE_OPENAI_RESOURCE_NAME.openai.azure.com/openai/v1`, else the
//!   model's base URL; an Azure host's root, `/openai` or
//!   `/openai/v1/responses` path becomes `/openai/v1`. The request goes to
//!   `{base}/responses?api-version=$AZURE_OPENAI_API_VERSION` (default `v1`).
//! * The key goes in `api-key` (not `Authorization`).
//! * The request's `model` is the deployment: `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`
//!   (`model=deployment,…`) maps catalog ids to deployment names.
//! * The body is the Responses body with Azure's own defaults (strict tools
//!   unless `supportsStrictMode: false`, `include` only with reasoning).
//!
//! The stream is the Responses stream ([`super::responses::Decoder`]).

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::responses::{Decoder, http_error_with_prefix};
use super::responses_request::{
    ResponsesCompat, convert_input, convert_tools, effort_value, normalize_tool_call_id_among, requested_level,
};
use crate::message::AssistantMessage;
use crate::model::{Model, ThinkingLevel};
use crate::provider::convert;
use crate::provider::credential::ProviderEnv;
use crate::provider::driver::{Api, Call, drive, same_transport_error};
use crate::provider::http::HttpClient;
use crate::provider::shared::{compat_bool, compat_value, configured_headers, level_entry, off_allowed, set_header};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderRequest, ProviderStream};

/// Providers whose `call|item` ids Azure requests keep as pairs.
const TOOL_CALL_PROVIDERS: [&str; 4] = ["openai", "openai-codex", "opencode", "azure"];
const MIN_OUTPUT_TOKENS: u64 = 16;
const DEFAULT_API_VERSION: &str = "v1";
/// pi's prefix of Azure error texts.
pub const ERROR_PREFIX: &str = "Azure OpenAI API error";

/// Azure OpenAI Responses provider.
pub struct AzureOpenAiResponses {
    http: HttpClient,
}

impl AzureOpenAiResponses {
    pub fn new(http: HttpClient) -> Self {
        AzureOpenAiResponses { http }
    }
}

/// The deployment a model is called through (`AZURE_OPENAI_DEPLOYMENT_NAME_MAP`, else its id).
pub fn deployment_name(model: &Model, env: &ProviderEnv) -> String {
    let map = env.get("AZURE_OPENAI_DEPLOYMENT_NAME_MAP").unwrap_or_default();
    let mut found = None;
    for entry in map.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        // pi's `split("=", 2)`: what lies after a second `=` is dropped; a later entry wins.
        let mut parts = entry.split('=');
        let (Some(id), Some(deployment)) = (parts.next(), parts.next()) else { continue };
        if !id.is_empty() && !deployment.is_empty() && id.trim() == model.id {
            found = Some(deployment.trim().to_string());
        }
    }
    found.filter(|d| !d.is_empty()).unwrap_or_else(|| model.id.clone())
}

fn is_azure_host(host: &str) -> bool {
    [".openai.azure.com", ".cognitiveservices.azure.com", ".ai.azure.com"].iter().any(|s| host.ends_with(s))
}

/// pi's `resolveAzureBaseUrl`: the resource's base URL, normalised.
pub fn resolve_base_url(model: &Model, env: &ProviderEnv) -> Result<String, ProviderError> {
    let chosen = env
        .get("AZURE_OPENAI_BASE_URL")
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
        .or_else(|| env.get("AZURE_OPENAI_RESOURCE_NAME").map(|r| format!("https://{r}.openai.azure.com/openai/v1")))
        .or_else(|| Some(model.base_url.clone()).filter(|u| !u.is_empty()));
    let Some(chosen) = chosen else {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, or model.baseUrl.",
        ));
    };
    normalize_base_url(&chosen)
}

fn normalize_base_url(base_url: &str) -> Result<String, ProviderError> {
    let trimmed = base_url.trim().trim_end_matches('/');
    let invalid =
        || ProviderError::new(ProviderErrorKind::InvalidRequest, format!("Invalid Azure OpenAI base URL: {base_url}"));
    let url = reqwest::Url::parse(trimmed).map_err(|_| invalid())?;
    let host = url.host_str().unwrap_or("").to_ascii_lowercase();
    let path = url.path().trim_end_matches('/');
    let mut url = url.clone();
    if is_azure_host(&host) && ["", "/openai", "/openai/v1/responses"].contains(&path) {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url.to_string().trim_end_matches('/').to_string())
}

/// `{base}/responses?api-version=…` (a query already in the base URL is kept before it).
pub fn endpoint(base_url: &str, env: &ProviderEnv) -> String {
    let version = env.get("AZURE_OPENAI_API_VERSION").unwrap_or_else(|| DEFAULT_API_VERSION.to_string());
    let (path, query) = match base_url.split_once('?') {
        Some((p, q)) => (p, format!("{q}&")),
        None => (base_url, String::new()),
    };
    let encoded: String = form_encode(&version);
    format!("{}/responses?{query}api-version={encoded}", path.trim_end_matches('/'))
}

fn form_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => (b as char).to_string(),
            b' ' => "+".to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// The Azure request body, keys in pi's order.
pub fn build_body(request: &ProviderRequest, deployment: &str) -> Value {
    let model = &request.model;
    let mut compat = ResponsesCompat::resolve(model);
    compat.strict_mode = compat_bool(model, "supportsStrictMode").unwrap_or(true);
    let unprepared = convert::to_llm(&request.messages);
    let max_tokens = convert::output_budget(request, &unprepared);
    let normalize =
        |id: &str, source: &AssistantMessage| normalize_tool_call_id_among(&TOOL_CALL_PROVIDERS, model, id, source);
    let llm = convert::transform_with(unprepared, model, Some(&normalize));
    let mut body = Map::new();
    body.insert("model".into(), json!(deployment));
    body.insert("input".into(), Value::Array(convert_input(model, &compat, request, &llm, None)));
    body.insert("stream".into(), json!(true));
    let cache_key_disabled = compat_value(model, "promptCacheKeyMode").and_then(Value::as_str) == Some("disabled");
    if !cache_key_disabled && let Some(id) = &request.session_id {
        body.insert("prompt_cache_key".into(), json!(id.chars().take(64).collect::<String>()));
    }
    body.insert("store".into(), json!(false));
    if max_tokens > 0 {
        body.insert("max_output_tokens".into(), json!(max_tokens.max(MIN_OUTPUT_TOKENS)));
    }
    if !request.tools.is_empty() && !compat.tools_in_input {
        body.insert("tools".into(), Value::Array(convert_tools(&request.tools, &compat)));
    }
    if model.reasoning {
        match requested_level(request) {
            Some(level) => {
                body.insert("reasoning".into(), json!({"effort": effort_value(model, level), "summary": "auto"}));
                body.insert("include".into(), json!(["reasoning.encrypted_content"]));
            }
            None if off_allowed(model) => {
                let off = level_entry(model, ThinkingLevel::Off).cloned().unwrap_or_else(|| json!("none"));
                body.insert("reasoning".into(), json!({"effort": off}));
            }
            None => {}
        }
    }
    Value::Object(body)
}

/// Request headers: the key as `api-key`, then model and request headers.
pub fn build_headers(request: &ProviderRequest) -> Result<Vec<(String, String)>, ProviderError> {
    let Some(key) = request.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return Err(ProviderError::new(
            ProviderErrorKind::Auth,
            format!("No API key for provider: {}", request.model.provider),
        ));
    };
    let mut headers = vec![("api-key".to_string(), key.to_string())];
    for (k, v) in configured_headers(request) {
        set_header(&mut headers, &k, v);
    }
    Ok(headers)
}

/// Azure's Chat Completions models (pi's `azureStreams`): the resource's
/// base URL and the deployment as the request's model, before the
/// `openai-completions` API builds the call.
pub fn prepare_completions(request: &mut ProviderRequest) -> Result<(), ProviderError> {
    if request.model.provider != "azure" || request.model.api != "openai-completions" {
        return Ok(());
    }
    request.model.base_url = resolve_base_url(&request.model, &request.env)?;
    request.model.id = deployment_name(&request.model, &request.env);
    Ok(())
}

fn prepare(request: &ProviderRequest) -> Result<Call, ProviderError> {
    let headers = build_headers(request)?;
    let base = resolve_base_url(&request.model, &request.env)?;
    let deployment = deployment_name(&request.model, &request.env);
    Ok(Call::new(endpoint(&base, &request.env), headers, build_body(request, &deployment)))
}

impl Provider for AzureOpenAiResponses {
    fn api(&self) -> &'static str {
        "azure-openai-responses"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let api = Api {
            http_error: Box::new(http_error_with_prefix(ERROR_PREFIX.to_string())),
            transport_error: same_transport_error,
        };
        drive(self.http.clone(), cancel, prepare(&request), Decoder::new(), api)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> ProviderEnv {
        ProviderEnv::new(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<HashMap<_, _>>())
    }

    fn model(base_url: &str) -> Model {
        let mut m = crate::provider::faux::faux_model();
        m.id = "gpt-x".into();
        m.provider = "azure".into();
        m.api = "azure-openai-responses".into();
        m.base_url = base_url.into();
        m
    }

    #[test]
    fn base_urls_resolve_like_pi() {
        let m = model("");
        let e = env(&[("AZURE_OPENAI_RESOURCE_NAME", "res")]);
        assert_eq!(resolve_base_url(&m, &e).unwrap(), "https://res.openai.azure.com/openai/v1");
        let e = env(&[("AZURE_OPENAI_BASE_URL", "https://res.openai.azure.com/"), ("AZURE_OPENAI_RESOURCE_NAME", "x")]);
        assert_eq!(resolve_base_url(&m, &e).unwrap(), "https://res.openai.azure.com/openai/v1");
        let e = env(&[("AZURE_OPENAI_BASE_URL", "https://a.cognitiveservices.azure.com/openai/v1/responses?x=1")]);
        assert_eq!(resolve_base_url(&m, &e).unwrap(), "https://a.cognitiveservices.azure.com/openai/v1");
        let e = env(&[("AZURE_OPENAI_BASE_URL", "http://127.0.0.1:9/proxy/")]);
        assert_eq!(resolve_base_url(&m, &e).unwrap(), "http://127.0.0.1:9/proxy");
        assert!(resolve_base_url(&m, &env(&[])).unwrap_err().message.starts_with("Azure OpenAI base URL is required"));
        assert_eq!(resolve_base_url(&model("http://127.0.0.1:1/v1"), &env(&[])).unwrap(), "http://127.0.0.1:1/v1");
        assert!(resolve_base_url(&m, &env(&[("AZURE_OPENAI_BASE_URL", "not a url")])).is_err());
    }

    #[test]
    fn endpoint_and_deployment() {
        let e = env(&[("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")]);
        assert_eq!(endpoint("http://h/openai/v1", &e), "http://h/openai/v1/responses?api-version=2025-04-01-preview");
        assert_eq!(endpoint("http://h/v1", &env(&[])), "http://h/v1/responses?api-version=v1");
        let e = env(&[("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", " other=o , gpt-x = my-dep,bad")]);
        assert_eq!(deployment_name(&model(""), &e), "my-dep");
        assert_eq!(deployment_name(&model(""), &env(&[])), "gpt-x");
    }
}
