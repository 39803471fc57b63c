//! Where an Azure OpenAI request goes, as pi 1.6.0 decides it: the
//! resource's base URL (`AZURE_OPENAI_BASE_URL`, else
//! `AZURE_OPENAI_RESOURCE_NAME`, else the model's), the endpoint's
//! `api-version` (`AZURE_OPENAI_API_VERSION`) and the deployment a model is
//! called through (`AZURE_OPENAI_DEPLOYMENT_NAME_MAP`). Shared by the
//! `azure-openai-responses` API (`openai::azure`) and Azure's Chat
//! Completions models ([`prepare_completions`]).

use crate::model::Model;
use crate::provider::env::ProviderEnv;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest};

const DEFAULT_API_VERSION: &str = "v1";

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
