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

use super::azure_resource::{deployment_name, endpoint, resolve_base_url};
use super::responses::{Decoder, http_error_with_prefix};
use super::responses_request::{
    ResponsesCompat, convert_input, convert_tools, effort_value, normalize_tool_call_id_among, requested_level,
};
use crate::message::AssistantMessage;
use crate::model::ThinkingLevel;
use crate::provider::convert;
use crate::provider::driver::{Api, Call, Reported, drive, same_transport_error};
use crate::provider::http::HttpClient;
use crate::provider::shared::{compat_bool, compat_value, configured_headers, level_entry, off_allowed, set_header};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderRequest, ProviderStream};

/// Providers whose `call|item` ids Azure requests keep as pairs.
const TOOL_CALL_PROVIDERS: [&str; 4] = ["openai", "openai-codex", "opencode", "azure"];
const MIN_OUTPUT_TOKENS: u64 = 16;
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
    if let Some(t) = &request.api_options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if !request.tools.is_empty() && !compat.tools_in_input {
        body.insert("tools".into(), Value::Array(convert_tools(&request.tools, &compat)));
    }
    if let Some(choice) = &request.api_options.tool_choice {
        body.insert("tool_choice".into(), choice.clone());
    }
    if model.reasoning {
        match requested_level(request) {
            Some(level) => {
                let summary = request.api_options.reasoning_summary.as_deref().unwrap_or("auto");
                body.insert("reasoning".into(), json!({"effort": effort_value(model, level), "summary": summary}));
                body.insert("include".into(), json!(["reasoning.encrypted_content"]));
            }
            None if off_allowed(model) => {
                let off = level_entry(model, ThinkingLevel::Off).cloned().unwrap_or_else(|| json!("none"));
                body.insert("reasoning".into(), json!({"effort": off}));
            }
            None => {}
        }
    }
    // Last, so the model's and the caller's sampling parameters win over named fields.
    request.api_options.apply_sampling(model, requested_level(request).unwrap_or(ThinkingLevel::Off), &mut body);
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
            reported: Reported::Successes,
        };
        drive(self.http.clone(), cancel, prepare(&request), Decoder::new(), api)
    }
}
